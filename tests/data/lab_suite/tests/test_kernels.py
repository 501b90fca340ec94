# A kernel-style suite: four tests fail, one prints a failed check and passes, four print NaN lines.
import pytest


@pytest.mark.parametrize("m", [16, 32, 64, 128])
def test_gemm_nan(m):
    for row in range(3):
        print(f"gemm M={m} row {row}: y diff: nan")
    assert m < 0, f"gemm M={m} produced NaN"


@pytest.mark.parametrize("m", [16, 32])
def test_rmsnorm(m):
    print(f"rmsnorm M={m}: max_abs_error 0.0001 (atol=0.01)")
    print(f"rmsnorm M={m}: PASSED")


def test_softmax_check():
    print("softmax M=64: FAILED (max diff 0.5 > atol 0.01)")


def test_layernorm_progress():
    print("warming up", end="")
    print(" done")
