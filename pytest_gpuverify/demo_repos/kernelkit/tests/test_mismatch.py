# A failing kernel test: the mismatch as torch.testing.assert_close words it (no torch here).
import pytest

MESSAGE = """Tensor-likes are not close!

Mismatched elements: 1024 / 1024 (100.0%)
Greatest absolute difference: 0.010000100135803223 at index (0,) (up to 1e-05 allowed)
Greatest relative difference: 0.0033333667088299990 at index (0,) (up to 1.3e-06 allowed)"""


@pytest.mark.parametrize("n", [1024])
def test_add_wrong(n):
    raise AssertionError(MESSAGE)
