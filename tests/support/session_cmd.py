"""The command line of a pytest session a test starts: this python's pytest, with the plugins this
machine has for other reasons left out. The hypothesis plugin alone costs about 0.3 s of CPU per
pytest start, which the suite's hundreds of sessions paid on CI's 2 cores; pytest-benchmark also
writes .benchmarks/ into the repo under test. Neither is the product's: runs of it keep
the plugins they name (`-p pytest_gpuverify.plugin` where a test needs it explicitly).
pytest-rerunfailures (a test dependency) is left out too, but by the tests of a rerun itself."""

import sys

PYTEST = (
    sys.executable,
    "-m",
    "pytest",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:benchmark",
    "-p",
    "no:hypothesispytest",
    "-p",
    "no:rerunfailures",
)
