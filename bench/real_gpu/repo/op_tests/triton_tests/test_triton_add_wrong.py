import pytest
import torch
from triton_add import add


@pytest.mark.parametrize("n", [1024, 98432])
def test_add_wrong(n):
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    torch.testing.assert_close(add(x, y, wrong=True), x + y)  # wrong on purpose: must FAIL
