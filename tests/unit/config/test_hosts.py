"""One rule for "this row is this machine": the run's checks, container resolution, the remote
pre-flight and `gpuverify doctor` all call config/hosts.py."""

from __future__ import annotations

import pytest

from pytest_gpuverify.config.hosts import same_host, serves_host


@pytest.mark.parametrize(
    "one,other,same",
    [
        ("mi300x-01", "mi300x-01", True),
        ("mi300x-01", "MI300X-01.lab.example", True),  # hostname prints the short name, a table the long
        ("mi300x-01.lab.example", "mi300x-01.other.example", True),
        ("mi300x-01", "mi300x-02", False),
        ("mi300x-01", "mi300x-011", False),
    ],
)
def test_same_host_compares_the_first_label_in_any_case(one, other, same):
    assert same_host(one, other) is same and same_host(other, one) is same


@pytest.mark.parametrize(
    "row_host,serves",
    [(None, True), ("", True), ("GPU-07.lab.example", True), ("gpu-07", True), ("gpu-08", False)],
)
def test_a_row_without_a_host_serves_every_host_one_with_a_host_only_that_one(row_host, serves):
    assert serves_host(row_host, "gpu-07") is serves
