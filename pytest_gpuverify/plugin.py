"""The plugin's entry point (pyproject.toml's ``pytest11`` names it): what pytest sees of
pytest-gpuverify in every run, switched on or not: the options and ini keys, the ``gpu`` marker,
the fixtures, and the switch.

The rest, the face (:mod:`pytest_gpuverify.face`), is imported by these hooks only once
``--gpu-verify`` is on, after their check (as pytest-xdist imports its scheduler only once
distribution is on): an installed plugin that a run does not switch on costs that run this module
and its hooks' early returns, nothing more. With it on, pytest_configure chooses this process's role
once (face/roles.py: one session, an xdist controller or worker) and registers it until
pytest_unconfigure; the role holds the engine, where this process runs targets.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path

import pytest

LOADED_AT = time.monotonic()  # --gpu-profile: what came before is the interpreter's and pytest's start

# pytest finds its rootdir and ini file before any plugin's options are known (determine_setup, on the
# arguments it cannot place yet): a path given after a space (``--gpu-history /srv/h.db``) is read as a
# test path there and may move the rootdir, and lose the ini file. ``--gpu-history=/srv/h.db`` is one
# argument that starts with ``-``, which that search passes by.
WITH_EQUALS = "; write it as --{name}=PATH (after a space pytest reads it as a test path when it finds its rootdir)"
VALUE_OPTIONS: set[str] = set()  # the options that take a value (filled by pytest_addoption)


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``--gpu-*`` options and ``gpu_*`` ini keys: declared in every run, so that ``--help`` lists
    them and an ini file that sets them is valid with the plugin off."""
    group = parser.getgroup("gpuverify", "GPU kernel verification (pytest-gpuverify)")
    _add_options(group)
    for option in group.options:
        if option.attrs().get("action") not in ("store_true", "store_false", "count"):
            VALUE_OPTIONS.update(name for name in option.names() if name.startswith("--"))
    for key, default in (
        ("gpu_env", None),
        ("gpu_history", None),
        ("gpu_attest_key", None),
        ("gpu_health", None),
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
        "--gpu-trace",
        default=None,
        metavar="kernels",
        help="after the timed runs, one extra run under the kernel tracer (rocprofv3, nsys, else torch's "
        "profiler): a printed time shorter than its kernels' GPU time makes the row INCONCLUSIVE",
    )
    group.addoption(
        "--gpu-trace-filter",
        default=None,
        metavar="REGEX",
        help="the kernels (by name) the printed times cover, e.g. the harness's own, not its cache flushes",
    )
    group.addoption(
        "--gpu-profiler",
        default=None,
        metavar="TOOL",
        help="one extra run under ncu, nsys, rocprofv3 or rocprof-compute; its report is stored beside the log",
    )
    group.addoption(
        "--gpu-profiler-filter", default=None, metavar="REGEX", help="the kernels (by name) --gpu-profiler profiles"
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
        "--gpu-attest-key",
        default=None,
        metavar="FILE",
        help="also sign each artifact's in-toto attestation (.intoto.jsonl) with this ed25519/ECDSA private key "
        "file (PEM or OpenSSH)" + WITH_EQUALS.format(name="gpu-attest-key"),
    )
    group.addoption(
        "--gpu-history",
        default=None,
        metavar="FILE|URL",
        help="add each artifact of the session to this history store (a SQLite file, a team's "
        "postgresql://user@host/db URL, or its ingest service's https:// URL, the token in "
        "$GPUVERIFY_HISTORY_TOKEN) as its target ends" + WITH_EQUALS.format(name="gpu-history"),
    )
    group.addoption(
        "--gpu-history-ref",
        default=None,
        metavar="REF",
        help="the branch or tag the session's commit is on, for --gpu-history (default: the branch "
        "checked out, when the commit is on it)",
    )
    group.addoption(
        "--gpu-health",
        default=None,
        metavar="SPEC|off",
        help="when a GPU of the history store (--gpu-history, or $GPUVERIFY_HEALTH_STORE) is skipped by the picker: "
        "timeouts=N/RUNS,ecc=N,no-gpu=P%%/RUNS (default timeouts=3/20,ecc=1,no-gpu=50%%/20; also $GPUVERIFY_HEALTH), "
        "or off",
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


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """With --gpu-verify, a session inside a kernel repo's checkout leaves the repo's conftest.py files
    out (face/start.py says why); --noconftest and --gpu-host-conftest leave that choice to pytest."""
    ns = early_config.known_args_namespace
    if not getattr(ns, "gpu_verify", False) or ns.noconftest or getattr(ns, "gpu_host_conftest", False):
        return
    from pytest_gpuverify.common.profile import PROFILE

    with PROFILE.phase("pydantic and settings imported"):  # the face, and the first of the plugin's models
        from pytest_gpuverify.face.start import leave_out_repo_conftests
    leave_out_repo_conftests(early_config, args)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """A session on GPU hosts over SSH: check them and give xdist their workers, before it starts."""
    if not config.getoption("gpu_verify", False) or hasattr(config, "workerinput") or config.getvalue("collectonly"):
        return
    from pytest_gpuverify.face.start import plan_gpu_hosts

    plan_gpu_hosts(config)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    # registered always, so `@pytest.mark.gpu` passes --strict-markers in runs without the plugin's work
    config.addinivalue_line(
        "markers",
        "gpu(gpus=N, repo=NAME): a GPU target of pytest-gpuverify; gpus is how many "
        "GPUs it needs, repo the Repos row kernel_container runs in (a suite outside the repo)",
    )
    moved = rootdir_moved(config) if not hasattr(config, "workerinput") else None
    if moved:
        sys.stderr.write(moved + "\n")
    if not config.getoption("gpu_verify", False):
        return
    from pytest_gpuverify.face.start import switch_on

    switch_on(config, loaded_at=LOADED_AT)  # xdist has set --dist and --tx by now, a worker its workerinput


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.getoption("gpu_verify", False):
        from pytest_gpuverify.face.start import switch_off

        switch_off(config)


# The fixtures serve a suite's own tests with or without --gpu-verify: without it (or in a process
# that runs no targets) they skip, and the face is not imported.


@pytest.fixture(scope="session")
def gpu_host(request: pytest.FixtureRequest):
    """The session's engine (host, GPUs, lock convention). Needs --gpu-verify; skips without it."""
    if not request.config.getoption("gpu_verify", False):
        pytest.skip("GPU fixture: run with --gpu-verify")
    from pytest_gpuverify.face.fixtures import session_engine

    return session_engine(request.config)


@pytest.fixture
def locked_gpu(request: pytest.FixtureRequest, gpu_host):
    """Holds idle GPUs for the test, locked, and releases them after. How many: the ``gpu`` marker's
    ``gpus`` (``@pytest.mark.gpu(gpus=4)``) or an indirect parameter; default 1. Yields the grant
    (``.indices``, in the order the command sees them). No idle GPU within --gpu-wait: the test fails
    with NO_GPU and its reason."""
    from pytest_gpuverify.face.fixtures import held_gpus

    yield from held_gpus(request, gpu_host)


@pytest.fixture
def kernel_container(request: pytest.FixtureRequest, gpu_host):
    """Runs commands in the resolved container (or on the host with --gpu-container none), on the
    test's locked GPUs when it holds them (``locked_gpu``); each ``.run(command, kind=..., repo=...)``
    returns its artifact (face/fixtures.py: KernelContainer)."""
    from pytest_gpuverify.face.fixtures import KernelContainer

    grant = request.getfixturevalue("locked_gpu") if "locked_gpu" in request.fixturenames else None
    return KernelContainer(gpu_host, request.node, grant)
