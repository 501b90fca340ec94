"""pytest wiring only: options, collection of GPU targets, the role of this process.

Without ``--gpu-verify`` every hook here returns at once and pytest behaves as without the plugin.
With it, pytest_configure chooses this process's role once (roles.py: one session, an xdist
controller or worker) and registers it until pytest_unconfigure; the role holds the engine,
:class:`pytest_gpuverify.engine.session.VerifySession`, where this process runs targets.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_gpuverify.config.errors import UsageError
from pytest_gpuverify.plugin_options import add_options, build_options, rootdir_moved
from pytest_gpuverify.plugin_options import option_value as _value
from pytest_gpuverify.roles import choose_role
from pytest_gpuverify.stash_keys import ENV_KEY, NO_CONFTEST_KEY, REMOTE_KEY, ROLE_KEY

# The engine (pydantic's models and what they carry) is imported once --gpu-verify is on: a pytest
# run without it pays no import of it (0.23 s of CPU here), only these hooks' early returns.
if TYPE_CHECKING:
    pass

LOADED_AT = time.monotonic()  # --gpu-profile: what came before is the interpreter's and pytest's start


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """A session inside a kernel repo's checkout does not import the repo's conftest.py files: they
    belong to its own pytest runs in the container (FlyDSL's turns "no test ran" into exit 0, and
    skips files by the arch it finds; on the host they could drop targets or hide an empty run, or
    fail to import torch)."""
    ns = early_config.known_args_namespace
    if not getattr(ns, "gpu_verify", False) or ns.noconftest or getattr(ns, "gpu_host_conftest", False):
        return
    from pytest_gpuverify.common.profile import PROFILE

    with PROFILE.phase("pydantic and settings imported"):  # the first of the plugin's models
        from pytest_gpuverify.config.envfile import EnvFileError, default_env_path, load_env_file
        from pytest_gpuverify.place.workspace import kernel_repo_of
        from pytest_gpuverify.remote.onhost import args_in_checkouts, forget_rootdir_option, serving_host

    here = Path(early_config.invocation_params.dir)
    try:
        env_path = default_env_path(ns.gpu_env or early_config.getini("gpu_env") or None, os.environ)
        with PROFILE.phase("env file"):
            env = load_env_file(env_path)
        if serving_host():  # a worker on a GPU host: target paths are in the host's checkouts
            forget_rootdir_option()
            args_in_checkouts(args, ns.file_or_dir or [], env, here)
        paths = [here / arg.split("::", 1)[0] for arg in ns.file_or_dir or [] if not arg.startswith("-")] or [here]
        repo = kernel_repo_of(env, paths)
    except (EnvFileError, OSError, ValueError):
        return  # pytest_configure reports the env file's problem
    early_config.stash[ENV_KEY] = (env_path, env)  # read once: pytest_configure takes it from here
    if repo is not None:
        ns.noconftest = True
        early_config.stash[NO_CONFTEST_KEY] = repo.repo


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """A session on GPU hosts over SSH: check them and give xdist their workers, before it starts."""
    if not config.getoption("gpu_verify", False) or hasattr(config, "workerinput") or config.getvalue("collectonly"):
        return
    from pytest_gpuverify.config.envfile import default_env_path, load_env_file
    from pytest_gpuverify.remote.controller import plan_remote

    try:
        env_path = default_env_path(_value(config, "gpu_env"), os.environ)
        read_early = config.stash.get(ENV_KEY, None)  # read before the initial conftests, when it could be
        env = read_early[1] if read_early and read_early[0] == env_path else load_env_file(env_path)
        remote = plan_remote(config, env, os.environ, build_options)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    if remote is not None:
        config.stash[REMOTE_KEY] = remote  # its role, chosen in pytest_configure, registers it


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    # registered always, so `@pytest.mark.gpu` passes --strict-markers in runs without the plugin's work
    config.addinivalue_line(
        "markers",
        "gpu(gpus=N, repo=NAME): a GPU target of pytest-gpuverify; gpus is how many "
        "GPUs it needs, repo the Repos row kernel_container runs in (a suite outside the repo)",
    )
    # the fixtures (kernel_container, locked_gpu, gpu_host) serve a suite's own tests with or without --gpu-verify
    config.pluginmanager.import_plugin("pytest_gpuverify.fixtures")
    moved = rootdir_moved(config) if not hasattr(config, "workerinput") else None
    if moved:
        sys.stderr.write(moved + "\n")
    if not config.getoption("gpu_verify", False):
        return
    role = choose_role(
        config, loaded_at=LOADED_AT
    )  # xdist has set --dist and --tx by now (its cmdline_main), a worker its workerinput
    config.stash[ROLE_KEY] = role
    role.register()
    if config.getoption("gpu_changed_since", None):
        from pytest_gpuverify.changed_items import ChangedSince

        config.pluginmanager.register(ChangedSince(config.getoption("gpu_changed_since")), "gpuverify-changed-since")


def pytest_unconfigure(config: pytest.Config) -> None:
    role = config.stash.get(ROLE_KEY, None)
    if role is not None:
        role.unregister()
        del config.stash[ROLE_KEY]
