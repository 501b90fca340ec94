"""in-toto attestations of a run: the Statement beside each artifact, its DSSE envelope and signatures,
the reviewer's policy and the Verification Summary Attestation a check emits."""
