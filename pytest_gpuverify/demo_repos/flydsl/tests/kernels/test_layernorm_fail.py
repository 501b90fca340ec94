import pytest


@pytest.mark.parametrize("n", [1024, 2048])
def test_layernorm(n):
    print(f"Max absolute error: {0.5 if n == 2048 else 1e-3:.2e} (atol=0.01)")
    assert n != 2048, "Max absolute error 5.00e-01 > atol 0.01"
