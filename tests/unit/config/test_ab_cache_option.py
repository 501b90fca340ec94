"""--gpu-ab-cache (config/options.py): a state of the two, for an A/B run, never warm under --gpu-cold."""

from __future__ import annotations

import pytest

from pytest_gpuverify.config.errors import UsageError
from pytest_gpuverify.config.options import check_ab_cache


def test_the_states_and_the_default() -> None:
    assert check_ab_cache(None, None, False) is None
    assert check_ab_cache("cold", "HEAD~1", True) == "cold" and check_ab_cache("warm", "HEAD~1", False) == "warm"


@pytest.mark.parametrize(
    "value, ab, cold, said",
    [
        ("hot", "HEAD~1", False, "is not a cache state"),
        ("cold", None, False, "no --gpu-ab was given"),
        ("warm", "HEAD~1", True, "--gpu-cold asks to be empty"),
    ],
)
def test_a_bad_use_names_the_option_and_the_fix(value, ab, cold, said) -> None:
    with pytest.raises(UsageError) as err:
        check_ab_cache(value, ab, cold)
    assert said in str(err.value) and "--gpu-ab-cache" in str(err.value)
