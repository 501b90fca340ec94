"""A stand-in for FlyDSL's python package (the real one lives in python/flydsl and build-fly)."""
