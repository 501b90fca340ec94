"""pytest-gpuverify: GPU kernel test runs as verified artifacts."""

__version__ = "0.1.0"
