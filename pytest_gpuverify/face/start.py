"""What the entry point's hooks (pytest_gpuverify/plugin.py) do once ``--gpu-verify`` is on: leave a
kernel repo's conftest.py files out, plan the workers on GPU hosts, and switch this process's role on
(pytest_configure) and off (pytest_unconfigure)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_gpuverify.common.profile import PROFILE
from pytest_gpuverify.config.envfile import EnvFileError, default_env_path, load_env_file
from pytest_gpuverify.config.errors import UsageError
from pytest_gpuverify.face.changed_items import PLUGIN_NAME as CHANGED_SINCE
from pytest_gpuverify.face.changed_items import ChangedSince
from pytest_gpuverify.face.options import build_options, option_value
from pytest_gpuverify.face.roles import choose_role
from pytest_gpuverify.face.stash_keys import ENV_KEY, NO_CONFTEST_KEY, REMOTE_KEY, ROLE_KEY
from pytest_gpuverify.place.workspace import kernel_repo_of
from pytest_gpuverify.remote.onhost import args_in_checkouts, forget_rootdir_option, serving_host


def leave_out_repo_conftests(early_config: pytest.Config, args: list[str]) -> None:
    """A session inside a kernel repo's checkout does not import the repo's conftest.py files: they
    belong to its own pytest runs in the container (FlyDSL's turns "no test ran" into exit 0, and
    skips files by the arch it finds; on the host they could drop targets or hide an empty run, or
    fail to import torch)."""
    ns = early_config.known_args_namespace
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


def plan_gpu_hosts(config: pytest.Config) -> None:
    """A session on GPU hosts over SSH (--gpu-hosts, --gpu-host of another machine): check them and
    give xdist their workers, before it starts; its role, chosen in pytest_configure, registers them."""
    from pytest_gpuverify.remote.controller import plan_remote  # execnet's and ssh's side: not every session's

    try:
        env_path = default_env_path(option_value(config, "gpu_env"), os.environ)
        read_early = config.stash.get(ENV_KEY, None)  # read before the initial conftests, when it could be
        env = read_early[1] if read_early and read_early[0] == env_path else load_env_file(env_path)
        remote = plan_remote(config, env, os.environ, build_options)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    if remote is not None:
        config.stash[REMOTE_KEY] = remote


def switch_on(config: pytest.Config, loaded_at: float | None = None) -> None:
    """This process's role, chosen once and registered as a plugin until :func:`switch_off`."""
    role = choose_role(config, loaded_at=loaded_at)
    config.stash[ROLE_KEY] = role
    role.register()
    if config.getoption("gpu_changed_since", None):
        config.pluginmanager.register(ChangedSince(config.getoption("gpu_changed_since")), CHANGED_SINCE)


def switch_off(config: pytest.Config) -> None:
    changed = config.pluginmanager.get_plugin(CHANGED_SINCE)
    if changed is not None:
        config.pluginmanager.unregister(changed)
    role = config.stash.get(ROLE_KEY, None)
    if role is not None:
        role.unregister()
        del config.stash[ROLE_KEY]
