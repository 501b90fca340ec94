"""One usage-error type (config/errors.py): every error a user's file or option can cause names its
source (the file as written, or the option) and a fix, on one line ending in ``Fix: ...``.

The errors are raised by the real readers and checks (env file, declarations, lock cell, options,
host and lock row choice, --gpu-hosts, --gpu-ab), from real files and a real git checkout.
"""

from __future__ import annotations

import pickle
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_gpuverify.config.declarations import DeclarationError, load_declarations, select
from pytest_gpuverify.config.envfile import EnvFileError, EnvFileMissing, load_env_file, parse_env_text
from pytest_gpuverify.config.errors import UsageError
from pytest_gpuverify.config.hosts import lock_for, select_host
from pytest_gpuverify.config.lockspec import LockPrefixError, parse_lock_prefix
from pytest_gpuverify.config.options import (
    RunOptions,
    SetupError,
    check_repeats,
    check_seconds,
    check_ticket,
    check_topic,
)
from pytest_gpuverify.place.ab import AbError, BaseWorktrees
from pytest_gpuverify.place.gitstate import run_git
from pytest_gpuverify.remote.txspec import remote_rows

HOST = socket.gethostname()


def env_text(hosts: str = f"| {HOST} | local | gfx942 | 8 |", locks: str = "") -> str:
    text = f"## Hosts\n| host | ssh alias | arch | gpus |\n|---|---|---|---|\n{hosts}\n"
    return text + (f"\n## GPU lock\n| host | picker | lock |\n|---|---|---|\n{locks}\n" if locks else "")


def two_hosts() -> str:
    return env_text(f"| {HOST} | local | gfx942 | 8 |\n| far | far-alias | gfx950 | 8 |")


def declarations(tmp_path: Path, text: str) -> Path:
    (tmp_path / "t.py").write_text("pass\n")
    path = tmp_path / "gpuverify.toml"
    path.write_text(text)
    return path


def options(tmp_path: Path, **given) -> RunOptions:
    return RunOptions(env_path=tmp_path / "env.md", **given)


def init_repo(repo: Path) -> None:
    repo.mkdir()
    (repo / "f.txt").write_text("x\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "c"]):
        subprocess.run(
            ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            check=True,
            capture_output=True,
        )


# Each case: (name, expected class, a call that raises it given tmp_path).
CASES: list[tuple[str, type, Callable[[Path], object]]] = [
    ("env file missing", EnvFileMissing, lambda tmp: load_env_file(tmp / "nope.md")),
    (
        "env file bad cell",
        EnvFileError,
        lambda tmp: parse_env_text(env_text("| h | local | gfx942 | eight |"), tmp / "env.md"),
    ),
    (
        "env file section missing",
        EnvFileError,
        lambda tmp: parse_env_text("# nothing\n", tmp / "env.md").require("Hosts"),
    ),
    (
        "env file lock cell",
        EnvFileError,
        lambda tmp: parse_env_text(
            env_text(locks=f"| {HOST} | builtin | flock -s /tmp/gpu-<id>.lock |"), tmp / "env.md"
        ),
    ),
    (
        "declaration unknown key",
        DeclarationError,
        lambda tmp: load_declarations(
            declarations(tmp, '[[targets]]\nname = "a"\nkind = "bench"\npath = "t.py"\ncolour = 1\n')
        ),
    ),
    ("declaration bad TOML", DeclarationError, lambda tmp: load_declarations(declarations(tmp, "[[targets]\n"))),
    (
        "declaration unknown target",
        DeclarationError,
        lambda tmp: select(
            load_declarations(declarations(tmp, '[[targets]]\nname = "a"\nkind = "bench"\npath = "t.py"\n')), ["b"]
        ),
    ),
    ("--ticket", UsageError, lambda tmp: check_ticket("../x")),
    ("--gpu-topic", UsageError, lambda tmp: check_topic("a/b")),
    ("--gpu-window", UsageError, lambda tmp: check_seconds("--gpu-window", "soon")),
    ("--gpu-wait", UsageError, lambda tmp: check_seconds("--gpu-wait", "-1")),
    ("--gpu-repeats", UsageError, lambda tmp: check_repeats("0")),
    (
        "--gpu-host",
        UsageError,
        lambda tmp: select_host(parse_env_text(env_text(), tmp / "env.md"), options(tmp, host="nope")),
    ),
    (
        "--gpu-arch",
        UsageError,
        lambda tmp: select_host(parse_env_text(env_text(), tmp / "env.md"), options(tmp, arch="gfx1100")),
    ),
    (
        "two hosts, none chosen",
        UsageError,
        lambda tmp: select_host(parse_env_text(two_hosts(), tmp / "env.md"), options(tmp)),
    ),
    (
        "remote host without fan-out",
        UsageError,
        lambda tmp: select_host(parse_env_text(two_hosts(), tmp / "env.md"), options(tmp, host="far")),
    ),
    (
        "no GPU lock row",
        UsageError,
        lambda tmp: (lambda env: lock_for(env, env.hosts[0]))(
            parse_env_text(env_text(locks="| other | builtin | flock /tmp/g-<id>.lock |"), tmp / "env.md")
        ),
    ),
    (
        "no lock cell",
        UsageError,
        lambda tmp: (lambda env: lock_for(env, env.hosts[0]))(
            parse_env_text(env_text(locks=f"| {HOST} | builtin | not set |"), tmp / "env.md")
        ),
    ),
    (
        "no lock folder",
        UsageError,
        lambda tmp: (lambda env: lock_for(env, env.hosts[0]))(
            parse_env_text(env_text(locks=f"| {HOST} | builtin | flock {tmp}/none/gpu-<id>.lock |"), tmp / "env.md")
        ),
    ),
    ("--gpu-hosts", UsageError, lambda tmp: remote_rows(parse_env_text(two_hosts(), tmp / "env.md"), None, None, "zz")),
    ("--gpu-ab", UsageError, lambda tmp: (init_repo(tmp / "r"), BaseWorktrees("no-such-ref").for_checkout(tmp / "r"))),
]


@pytest.mark.parametrize("name, kind, cause", CASES, ids=[c[0] for c in CASES])
def test_every_usage_error_names_its_source_and_a_fix(tmp_path, name, kind, cause):
    with pytest.raises(UsageError) as caught:
        cause(tmp_path)
    error, line = caught.value, str(caught.value)
    assert type(error) is kind and isinstance(error, SetupError)  # one type: the setup checks catch them all
    assert "\n" not in line and str(error.source) in line, (name, line)
    assert error.fix.strip() and line.endswith(f"Fix: {' '.join(error.fix.split())}"), (name, line)
    assert "Fix:" not in error.message, f"{name}: the fix belongs in its own field, not the message: {line}"
    if not error.named:  # a file leads its line, with the place in it
        assert line.startswith(f"{error.source}: " + (f"{error.where}: " if error.where else "")), line
    copy = pickle.loads(pickle.dumps(error))  # xdist workers pass errors to the controller
    assert type(copy) is type(error) and str(copy) == line and copy.__dict__ == error.__dict__


def test_the_documented_forms_are_unchanged(tmp_path):
    """The line a user sees today, for a file (labelled) and for an option (its subject)."""
    with pytest.raises(EnvFileError) as env_error:
        parse_env_text(env_text("| h | local | gfx942 | eight |"), "~/.cursor/mstack/env.md")
    assert str(env_error.value) == (
        "~/.cursor/mstack/env.md: section 'Hosts', row 1 (h): gpus 'eight' is not a "
        "number. Fix: write the GPU count, e.g. 8."
    )
    with pytest.raises(UsageError) as option_error:
        check_seconds("--gpu-window", "soon")
    assert str(option_error.value) == "--gpu-window 'soon' is not a number of seconds. Fix: e.g. --gpu-window 2"
    assert (option_error.value.source, option_error.value.where) == ("--gpu-window", None)
    with pytest.raises(EnvFileError) as dashed:  # a file whose name starts like an option still leads its line
        parse_env_text(env_text("| h | local | gfx942 | eight |"), "-env.md")
    assert str(dashed.value).startswith("-env.md: section 'Hosts', row 1 (h): gpus 'eight'")


def test_a_lock_cell_error_is_a_usage_error_the_env_file_places(tmp_path):
    with pytest.raises(LockPrefixError) as caught:
        parse_lock_prefix("flock -s /tmp/gpu-<id>.lock")
    assert isinstance(caught.value, UsageError) and isinstance(caught.value, ValueError)
    with pytest.raises(EnvFileError) as placed:
        parse_env_text(env_text(locks=f"| {HOST} | builtin | flock -s /tmp/gpu-<id>.lock |"), tmp_path / "env.md")
    assert (placed.value.message, placed.value.fix) == (caught.value.message, caught.value.fix)
    assert placed.value.section == "GPU lock" and placed.value.row == 1


def test_the_lock_cell_is_read_once_with_the_file(tmp_path):
    env = parse_env_text(env_text(locks=f"| {HOST} | builtin | flock -w 5 {tmp_path}/gpu-<id>.lock |"), "env.md")
    row = env.gpu_lock(HOST)
    assert row is not None and row.lock_spec == parse_lock_prefix(row.lock or "")
    spec, picker = lock_for(env, env.hosts[0])
    assert spec is row.lock_spec and picker is None and spec.wait_s == 5.0


def test_git_missing_or_unstartable_is_none_not_a_crash(tmp_path, monkeypatch):
    init_repo(tmp_path / "r")
    trees = BaseWorktrees("HEAD")
    made = trees.for_checkout(tmp_path / "r")
    assert made.path.is_dir() and run_git(tmp_path / "r", "rev-parse", "HEAD") is not None
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no git to start
    assert run_git(tmp_path / "r", "rev-parse", "HEAD") is None
    with pytest.raises(AbError, match=r"--gpu-ab HEAD~1: not a commit in .*Fix:"):
        BaseWorktrees("HEAD~1").for_checkout(tmp_path / "r")
    trees.remove_all()  # git cannot remove it: the folder is deleted all the same, nothing raised
    assert not made.path.exists() and trees.removed == [str(made.path)]
