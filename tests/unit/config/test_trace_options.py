"""--gpu-trace, --gpu-profiler and their kernel filters: what each accepts, and the usage error (option,
problem, fix) for anything else."""

from __future__ import annotations

import pytest

from pytest_gpuverify.config.errors import UsageError
from pytest_gpuverify.config.options import check_kernel_filter, check_profiler, check_trace


def test_accepted_values():
    assert check_trace(None) is None and check_trace("kernels") == "kernels"
    assert [check_profiler(t) for t in ("ncu", "nsys", "rocprofv3", "rocprof-compute")] == [
        "ncu",
        "nsys",
        "rocprofv3",
        "rocprof-compute",
    ]
    assert check_kernel_filter("--gpu-trace-filter", "^gemm", "kernels", "--gpu-trace") == "^gemm"


def test_a_trace_kind_that_is_not_one_names_the_option_and_the_fix():
    with pytest.raises(UsageError) as exc:
        check_trace("api")
    assert (exc.value.message, exc.value.fix) == ("--gpu-trace 'api' is not a trace kind", "use --gpu-trace kernels")
    with pytest.raises(UsageError, match="--gpu-profiler 'vtune' is not a profiler"):
        check_profiler("vtune")


def test_a_filter_needs_its_option_and_a_valid_regex():
    with pytest.raises(UsageError) as exc:
        check_kernel_filter("--gpu-trace-filter", "gemm", None, "--gpu-trace")
    assert exc.value.message == "--gpu-trace-filter narrows --gpu-trace, and no --gpu-trace was given"
    with pytest.raises(UsageError, match=r"--gpu-profiler-filter '\(gemm' is not a regular expression"):
        check_kernel_filter("--gpu-profiler-filter", "(gemm", "ncu", "--gpu-profiler")
