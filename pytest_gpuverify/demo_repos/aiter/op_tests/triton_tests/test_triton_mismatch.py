# A failing Triton kernel test: the torch.testing.assert_close mismatch block.
import pytest

MESSAGE = """Tensor-likes are not close!

Mismatched elements: 2069 / 524288 (0.4%)
Greatest absolute difference: 54.87181854248047 at index (399, 467) (up to 0.001 allowed)
Greatest relative difference: 40.02494812011719 at index (143, 159) (up to 0.001 allowed)"""


@pytest.mark.parametrize("m", [128, 256])
def test_matmul(m):
    if m == 256:
        raise AssertionError(MESSAGE)
