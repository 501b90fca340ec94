"""The plugin's command-line options and ini keys, and their translation into :class:`RunOptions`.

Wiring stays in :mod:`pytest_gpuverify.plugin`: its ``pytest_addoption`` calls :func:`add_options`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_gpuverify.config.options import RunOptions


# pytest finds its rootdir and ini file before any plugin's options are known (determine_setup, on the
# arguments it cannot place yet): a path given after a space (``--gpu-history /srv/h.db``) is read as a
# test path there and may move the rootdir, and lose the ini file. ``--gpu-history=/srv/h.db`` is one
# argument that starts with ``-``, which that search passes by.
WITH_EQUALS = "; write it as --{name}=PATH (after a space pytest reads it as a test path when it finds its rootdir)"
VALUE_OPTIONS: set[str] = set()  # the options that take a value (filled by add_options)


def add_options(parser: pytest.Parser) -> None:
    """The ``--gpu-*`` options and ``gpu_*`` ini keys (called from ``pytest_addoption``)."""
    group = parser.getgroup("gpuverify", "GPU kernel verification (pytest-gpuverify)")
    _add_options(group)
    for option in group.options:
        if option.attrs().get("action") not in ("store_true", "store_false", "count"):
            VALUE_OPTIONS.update(name for name in option.names() if name.startswith("--"))
    for key, default in (
        ("gpu_env", None),
        ("gpu_history", None),
        ("gpu_arch", None),
        ("gpu_container", None),
        ("gpu_window", "2"),
        ("gpu_wait", "0"),
        ("gpu_timeout", "3600"),
    ):
        parser.addini(key, f"pytest-gpuverify: default for --{key.replace('_', '-')}", default=default)
    parser.addini(
        "gpu_pytest_paths",
        "pytest-gpuverify: globs from the rootdir (tests/test_*.py) of test files "
        "that run as GPU targets of kind pytest",
        type="linelist",
        default=[],
    )


def _add_options(group) -> None:
    group.addoption("--gpu-verify", action="store_true", default=False, help="turn the plugin on")
    group.addoption("--ticket", default=None, metavar="KEY", help="ticket key; artifacts go to <tickets>/KEY/")
    group.addoption(
        "--gpu-env",
        default=None,
        metavar="PATH",
        help="env file (default $GPUVERIFY_ENV, else ~/.cursor/mstack/env.md)" + WITH_EQUALS.format(name="gpu-env"),
    )
    group.addoption(
        "--gpu-arch", default=None, metavar="ARCH", help="arch the run needs (gfx942, gfx950); picks the host"
    )
    group.addoption("--gpu-host", default=None, metavar="NAME", help="a Hosts row by name")
    group.addoption(
        "--gpu-hosts", default=None, metavar="all|A,B|ARCH", help="spread the targets over these GPU hosts (SSH)"
    )
    group.addoption(
        "--gpu-sync", action="store_true", default=False, help="rsync the local checkout to the GPU host(s) first"
    )
    group.addoption(
        "--gpu-sync-overwrite",
        action="store_true",
        default=False,
        help="--gpu-sync may replace and delete changes made in the host's checkout (listed)",
    )
    group.addoption("--gpu-container", default=None, metavar="NAME", help="container to run in (skips resolution)")
    group.addoption("--gpu-window", default=None, metavar="S", help="idle sampling window in seconds (default 2)")
    group.addoption(
        "--gpu-wait", default=None, metavar="S", help="longest wait for an idle GPU before NO_GPU (default 0)"
    )
    group.addoption(
        "--gpu-timeout", default=None, metavar="S", help="one command's time limit in seconds (default 3600)"
    )
    group.addoption("--gpu-topic", default=None, metavar="NAME", help="artifact topic when one target runs")
    group.addoption(
        "--gpu-cold", action="store_true", default=False, help="fresh JIT caches for the run, removed after"
    )
    group.addoption(
        "--gpu-repeats", default=None, metavar="N", help="run each target N times under one lock (rows carry run)"
    )
    group.addoption(
        "--gpu-ab",
        default=None,
        metavar="BASE",
        help="A/B: also run each target on git ref BASE (a worktree), interleaved",
    )
    group.addoption(
        "--gpu-ab-cache",
        default=None,
        metavar="warm|cold",
        help="the A/B sides' compile caches, the same state on both: warm (default) runs each side once, "
        "unmeasured, on its own commit into caches of its own, so every measured run finds its kernels "
        "compiled and tuned and the sides differ in their kernels only; cold starts every measured run "
        "from empty caches (compile and autotune in each; the default under --gpu-cold)",
    )
    group.addoption(
        "--gpu-allow-dirty", action="store_true", default=False, help="report a dirty repo instead of INCONCLUSIVE"
    )
    group.addoption(
        "--gpu-start-container", action="store_true", default=False, help="allow starting your stopped container"
    )
    group.addoption(
        "--gpu-args",
        default=None,
        metavar="ARGS",
        help='arguments for the command-line targets: --gpu-args="-d bf16 -m 128" (with =)',
    )
    group.addoption(
        "--gpu-target",
        action="append",
        default=[],
        metavar="NAME",
        help="run a target declared in gpuverify.toml / [tool.gpuverify] (repeatable)",
    )
    group.addoption(
        "--gpu-changed-since",
        default=None,
        metavar="REF",
        help="run only the GPU targets whose files (their own file, the files their command names) "
        "changed since REF (git diff REF...HEAD, e.g. origin/main); one line says which were skipped",
    )
    group.addoption(
        "--gpu-ci-summary",
        default=None,
        metavar="PATH",
        help="write the job summary (markdown; GitHub's, also under other CI) to PATH"
        + WITH_EQUALS.format(name="gpu-ci-summary"),
    )
    group.addoption(
        "--gpu-history",
        default=None,
        metavar="FILE|URL",
        help="add each artifact of the session to this history store (a SQLite file, or a team's "
        "postgresql://user@host/db URL) as its target ends" + WITH_EQUALS.format(name="gpu-history"),
    )
    group.addoption(
        "--gpu-history-ref",
        default=None,
        metavar="REF",
        help="the branch or tag the session's commit is on, for --gpu-history (default: the branch "
        "checked out, when the commit is on it)",
    )
    group.addoption(
        "--gpu-shard",
        default=None,
        metavar="I/N|auto|auto/N",
        help="run shard I (from 0) of N of the GPU targets; auto: read from a Slurm array, Buildkite "
        "parallel job or Kubernetes Indexed Job (auto/N: its count)",
    )
    group.addoption(
        "--gpu-shard-run",
        default=None,
        metavar="ID",
        help="the run the shards belong to (default: the CI's or Slurm array's id)",
    )
    group.addoption(
        "--gpu-durations",
        default=None,
        metavar="FILE",
        help="balance --gpu-shard by earlier durations (written by gpuverify durations)"
        + WITH_EQUALS.format(name="gpu-durations"),
    )
    group.addoption(
        "--gpu-slurm",
        action="store_true",
        default=False,
        help="submit each GPU target as a Slurm job (settings: the env file's Slurm section) and wait",
    )
    group.addoption(
        "--gpu-slurm-shards",
        default=None,
        metavar="N",
        help="with --gpu-slurm: N jobs, each a shard of the GPU targets, not one job per target",
    )
    group.addoption(
        "--gpu-profile",
        action="store_true",
        default=False,
        help="print where the session's milliseconds went, phase by phase, at its end",
    )
    group.addoption(
        "--gpu-host-conftest",
        action="store_true",
        default=False,
        help="import a kernel repo's conftest.py files in this (host) session too",
    )


def rootdir_moved(config: pytest.Config) -> str | None:
    """One line where pytest took its rootdir or ini file from the value of one of these options given
    after a space (see :data:`WITH_EQUALS`), naming the option and the fix; None where it did not."""
    import shlex

    try:
        from _pytest.config.findpaths import determine_setup  # pytest's own search, run again without the values

        args = shlex.split(os.environ.get("PYTEST_ADDOPTS", "")) + [str(a) for a in config.invocation_params.args]
        here = Path(config.invocation_params.dir)
        spaced = [
            (opt, value)
            for opt, value in zip(args, args[1:])
            if opt in VALUE_OPTIONS and not value.startswith("-") and (here / value.split("::")[0]).exists()
        ]
        if not spaced:
            return None
        ns = config.option
        setup = dict(
            inifile=ns.inifilename,
            args=[str(a) for a in ns.file_or_dir or []],
            rootdir_cmd_arg=ns.rootdir or None,
            invocation_dir=here,
        )
        try:
            found = determine_setup(override_ini=ns.override_ini, **setup)  # pytest 9
        except TypeError:
            found = determine_setup(**setup)
        rootpath, inipath = found[0], found[1]
    except Exception:  # noqa: BLE001  # pytest's internals moved: no warning, never a failed session
        return None
    if Path(rootpath) == Path(config.rootpath) and inipath == config.inipath:
        return None
    opt, value = spaced[0]
    return (
        f"gpuverify: pytest took its rootdir from '{opt} {value}': {config.rootpath} (ini file "
        f"{config.inipath or 'none'}), not {rootpath} (ini file {inipath or 'none'}). Fix: write {opt}={value}"
    )


def option_value(config: pytest.Config, name: str) -> str | None:
    """The command-line value of option ``name``, else its ini key's."""
    cli = config.getoption(name)
    return cli if cli is not None else config.getini(name)


def build_options(config: pytest.Config) -> RunOptions:
    """The run's settings from the command line and ini keys; UsageError names a bad value."""
    from pytest_gpuverify.config.envfile import default_env_path
    from pytest_gpuverify.config.options import (
        RunOptions,
        check_ab_cache,
        check_repeats,
        check_seconds,
        check_ticket,
        check_topic,
    )
    from pytest_gpuverify.remote.onhost import serving_host

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
        paths=_path_arguments(config),
    )


def _path_arguments(config: pytest.Config) -> tuple[Path, ...]:
    """The command line's file and folder arguments (node ids without their ``::`` part)."""
    here = Path(config.invocation_params.dir)
    args = (
        [a for a in config.args if not a.startswith("-")] if config.args_source == pytest.Config.ArgsSource.ARGS else []
    )
    return tuple(here / a.split("::", 1)[0] for a in args)
