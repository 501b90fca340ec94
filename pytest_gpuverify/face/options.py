"""The run's settings (:class:`RunOptions`) from the plugin's command-line options and ini keys
(declared in :mod:`pytest_gpuverify.plugin`, which pytest loads in every run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_gpuverify.config.envfile import default_env_path
from pytest_gpuverify.config.options import (
    RunOptions,
    check_ab_cache,
    check_attest_key,
    check_kernel_filter,
    check_profiler,
    check_repeats,
    check_seconds,
    check_ticket,
    check_topic,
    check_trace,
)
from pytest_gpuverify.remote.onhost import serving_host


def option_value(config: pytest.Config, name: str) -> str | None:
    """The command-line value of option ``name``, else its ini key's."""
    cli = config.getoption(name)
    return cli if cli is not None else config.getini(name)


def build_options(config: pytest.Config) -> RunOptions:
    """The run's settings from the command line and ini keys; UsageError names a bad value."""
    return RunOptions(
        env_path=default_env_path(option_value(config, "gpu_env"), os.environ),
        ticket=check_ticket(config.getoption("ticket")),
        arch=option_value(config, "gpu_arch"),
        host=serving_host() or config.getoption("gpu_host"),
        on_host=serving_host() is not None,
        container=option_value(config, "gpu_container"),
        window_s=check_seconds("--gpu-window", option_value(config, "gpu_window")),
        wait_s=check_seconds("--gpu-wait", option_value(config, "gpu_wait")),
        timeout_s=check_seconds("--gpu-timeout", option_value(config, "gpu_timeout"), minimum=1),
        topic=check_topic(config.getoption("gpu_topic")),
        cold=config.getoption("gpu_cold"),
        allow_dirty=config.getoption("gpu_allow_dirty"),
        start_container=config.getoption("gpu_start_container"),
        invocation_dir=Path(config.invocation_params.dir),
        echo_output=config.getoption("capture") == "no",
        repeats=check_repeats(config.getoption("gpu_repeats")),
        ab_base=config.getoption("gpu_ab") or None,
        ab_cache=check_ab_cache(
            config.getoption("gpu_ab_cache"), config.getoption("gpu_ab"), config.getoption("gpu_cold")
        ),
        ci_summary=Path(config.getoption("gpu_ci_summary")).expanduser()
        if config.getoption("gpu_ci_summary")
        else None,
        attest_key=check_attest_key(option_value(config, "gpu_attest_key"), Path(config.invocation_params.dir)),
        paths=_path_arguments(config),
        trace=check_trace(config.getoption("gpu_trace")),
        trace_filter=check_kernel_filter(
            "--gpu-trace-filter", config.getoption("gpu_trace_filter"), config.getoption("gpu_trace"), "--gpu-trace"
        ),
        profile=check_profiler(config.getoption("gpu_profiler")),
        profile_filter=check_kernel_filter(
            "--gpu-profiler-filter",
            config.getoption("gpu_profiler_filter"),
            config.getoption("gpu_profiler"),
            "--gpu-profiler",
        ),
    )


def _path_arguments(config: pytest.Config) -> tuple[Path, ...]:
    """The command line's file and folder arguments (node ids without their ``::`` part)."""
    here = Path(config.invocation_params.dir)
    args = (
        [a for a in config.args if not a.startswith("-")] if config.args_source == pytest.Config.ArgsSource.ARGS else []
    )
    return tuple(here / a.split("::", 1)[0] for a in args)
