"""Fixtures the unit and end-to-end tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from parse_cases import ENGINES

from pytest_gpuverify.parsers.reading import prefilter


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Iterator[str]:
    """The test once with each engine that finds a printout's candidate lines (Hyperscan where its
    wheel is installed, and ``re``): both must find every line that matters. A module takes it for
    every test with ``pytestmark = pytest.mark.usefixtures("engine")``."""
    saved = prefilter.ENGINE
    prefilter.ENGINE = request.param
    yield request.param
    prefilter.ENGINE = saved
