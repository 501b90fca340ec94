# Ordinary pytest tests of a kernel repo: one case per shape, checked against a reference.
import pytest

from kernelkit import add


@pytest.mark.parametrize("n", [128, 1024, 4096])
def test_add(n):
    a, b = list(range(n)), [2 * i for i in range(n)]
    assert add(a, b) == [3 * i for i in range(n)]
    print(f"N={n}: max_abs_error=0.0")
