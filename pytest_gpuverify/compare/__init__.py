"""``gpuverify compare``: base against head, per perf row, with a call a reviewer can trust."""
