"""Verification of written artifacts: the schema, each rule re-derived from the raw log, provenance,
times and GPU exclusivity. Used by ``gpuverify check``, compare, merge and the reports."""
