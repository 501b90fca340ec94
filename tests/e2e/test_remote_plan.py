"""remote/ without sshd: which rows a session runs on, the xdist specs, and the worker's paths."""

from __future__ import annotations

import tempfile
from pathlib import Path

import execnet
import pytest

from pytest_gpuverify.config.envfile import parse_env_text
from pytest_gpuverify.config.options import SetupError
from pytest_gpuverify.remote.onhost import args_in_checkouts, declarations_on_host
from pytest_gpuverify.remote.txspec import HOST_VARIABLE, checkouts_root, host_of_spec, remote_rows, tx_specs


def env_of(tmp_path, hosts: str, repos: str = ""):
    text = (
        "## Hosts\n\n| host | ssh alias | arch | gpus | python |\n|---|---|---|---|---|\n"
        + hosts
        + "\n## Repos\n\n| repo | path | container | mount |\n|---|---|---|---|\n"
        + repos
    )
    return parse_env_text(text, tmp_path / "env.md")


HOSTS = (
    "| here | local | gfx942 | 8 | not set |\n| a1 | gpu-a1 | gfx942 | 2 | /opt/venv/bin/python |\n"
    "| b1 | gpu-b1 | gfx950 | 4 | not set |\n"
)


def test_python_column_is_optional_and_read(tmp_path):
    env = env_of(tmp_path, HOSTS)
    assert [h.python for h in env.hosts] == [None, "/opt/venv/bin/python", None]
    plain = parse_env_text(
        "## Hosts\n\n| host | ssh alias | arch | gpus |\n|---|---|---|---|\n| x | local | gfx942 | 1 |\n",
        tmp_path / "e.md",
    )
    assert plain.hosts[0].python is None


def test_which_rows_run_remotely(tmp_path):
    env = env_of(tmp_path, HOSTS)
    assert remote_rows(env, "here", None, None) is None  # the local row: runs here, as before
    assert [r.host for r in remote_rows(env, "a1", None, None)] == ["a1"]
    assert [r.host for r in remote_rows(env, None, "gfx950", None)] == ["b1"]
    assert remote_rows(env, None, "gfx942", None) is None  # two rows: select_host asks which
    assert [r.host for r in remote_rows(env, None, None, "all")] == ["a1", "b1"]
    assert [r.host for r in remote_rows(env, None, None, "gfx942")] == ["a1"]
    assert [r.host for r in remote_rows(env, None, None, "b1,a1")] == ["b1", "a1"]
    with pytest.raises(SetupError, match="'zz' is not a host or arch in Hosts of .*Fix: use all"):
        remote_rows(env, None, None, "a1,zz")
    with pytest.raises(SetupError, match="here is the local row"):
        remote_rows(env, None, None, "here")


def test_tx_specs_one_worker_per_gpu_with_the_rows_python(tmp_path):
    env = env_of(
        tmp_path, HOSTS, f"| aiter | {tmp_path}/repos/aiter | c | /w |\n| fly | {tmp_path}/repos/fly | c | /f |\n"
    )
    rows = remote_rows(env, None, None, "all")
    specs = tx_specs(rows, None, "/cfg/ssh_config", 7, {"a1": checkouts_root(env), "b1": "/srv/b1/checkouts"})
    assert len(specs) == 6 and len(set(specs[:2])) == 1
    spec = execnet.XSpec(specs[0])
    assert spec.ssh.split() == [
        "-o",
        "BatchMode=yes",
        "-o",
        "ConnectTimeout=7",
        "-o",
        "ServerAliveInterval=5",
        "-o",
        "ServerAliveCountMax=3",
        "gpu-a1",
    ]
    assert spec.python == "/opt/venv/bin/python -X pycache_prefix=$HOME/.cache/gpuverify/pycache"
    assert spec.ssh_config == "/cfg/ssh_config"
    assert spec.env == {HOST_VARIABLE: "a1", "PYTEST_ADDOPTS": f"--rootdir={tmp_path}/repos"}
    assert host_of_spec(spec) == "a1"
    assert execnet.XSpec(specs[2]).python.split()[0] == "python3"  # default
    assert execnet.XSpec(specs[2]).env["PYTEST_ADDOPTS"] == "--rootdir=/srv/b1/checkouts"  # b1's own paths
    assert len(tx_specs(rows, 1, None, 7)) == 2  # -n 1: one worker per host


def test_worker_finds_paths_and_declarations_in_the_hosts_checkouts(tmp_path):
    for repo in ("aiter", "fly"):
        (tmp_path / repo / "op_tests").mkdir(parents=True)
        (tmp_path / repo / "op_tests" / "test_x.py").write_text("")
    env = env_of(tmp_path, HOSTS, f"| aiter | {tmp_path}/aiter | c | /w |\n| fly | {tmp_path}/fly | c | /f |\n")
    here = tmp_path / "scratch"
    here.mkdir()
    args = ["--gpu-verify", "aiter:op_tests/test_x.py::case", "op_tests/test_x.py"]
    positional = args[1:]
    args_in_checkouts(args, positional, env, here)
    assert args[1] == f"{tmp_path}/aiter/op_tests/test_x.py::case"
    assert args[2] == "op_tests/test_x.py"  # in both checkouts: left as given, pytest says it is not found
    assert positional[0] == args[1]
    assert declarations_on_host(env, ["k"]) is None
    for repo in ("aiter", "fly"):
        (tmp_path / repo / "gpuverify.toml").write_text('[[targets]]\nname = "k"\npath = "op_tests/test_x.py"\n')
    from pytest_gpuverify.config.declarations import DeclarationError

    with pytest.raises(DeclarationError, match=r"--gpu-target k is declared in .*aiter.*gpuverify.toml and .*fly"):
        declarations_on_host(env, ["k"])
    (tmp_path / "fly" / "gpuverify.toml").unlink()
    assert declarations_on_host(env, ["k"]) == tmp_path / "aiter" / "gpuverify.toml"


def test_worker_hands_back_its_written_files_within_the_limit(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from pytest_gpuverify.remote import collect

    art, raw = tmp_path / "bench_a.json", tmp_path / "bench_a.20260101T000000Z.log"
    art.write_text("{}")
    raw.write_bytes(b"x" * 100)
    (tmp_path / "bench_a.json.sig").write_text("sig")
    big = tmp_path / "bench_b.json"
    big.write_bytes(b"y" * 50)
    outcomes = [
        SimpleNamespace(written=True, artifact_path=art, raw_path=raw, junit_path=None),
        SimpleNamespace(written=False, artifact_path=tmp_path / "bench_never.json", raw_path=None, junit_path=None),
        SimpleNamespace(written=True, artifact_path=big, raw_path=None, junit_path=None),
    ]
    monkeypatch.setattr(collect, "MAX_BYTES", 110)
    files, left = collect.outcome_files(outcomes)
    assert [name for name, _ in files] == ["bench_a.json", "bench_a.json.sig", "bench_a.20260101T000000Z.log"]
    assert len(left) == 1 and "bench_b.json (50 B) was left on the host" in left[0]

    collector = collect.ArtifactCollector(tmp_path / "out")
    staging_root = tmp_path / "tmp"
    staging_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(staging_root))  # this test's own, so no other test's folders
    collector.receive(
        "hostA", "gw0", {collect.FILES_KEY: [("../evil.json", b"{}"), ("bench_a.json", b"{}")], collect.NOTES_KEY: left}
    )
    collector.receive("hostA", "gw0", {collect.FILES_KEY: [("bench_a.json", b"{}")], collect.NOTES_KEY: left})
    taken, problems = collector.landed()  # taken as the worker ended (xdist may report that end twice: once)
    assert len([p for p in problems if "REFUSED" in p]) == 1 and len([p for p in problems if "left on" in p]) == 1
    assert taken == 0 and any("REFUSED" in p and "bench_a.json" in p for p in problems)  # `{}` fails check
    assert not any("evil" in p for p in problems), "a name, never a path: ../evil.json was not even staged"
    assert any(p.startswith("hostA: ") and "left on the host" in p for p in problems)
    assert not list(staging_root.iterdir()), "its staging folder is gone"
    assert not list((tmp_path / "out").glob("*.json")) and not (tmp_path / "evil.json").exists()


def test_the_wait_line_names_the_host(tmp_path):
    import threading

    from pytest_gpuverify.config.envfile import parse_lock_prefix
    from pytest_gpuverify.execute.host_commands import LocalHost
    from pytest_gpuverify.gpu.rocm import RocmBackend
    from pytest_gpuverify.lease.picker import GpuPicker
    from pytest_gpuverify.lease.sampler import IdleSampler
    from pytest_gpuverify.simulator import SimState, install, load_state, save_state

    state = SimState.idle(gpus=2)
    for i in range(2):
        state.set_busy(i)
    state_path = install(tmp_path / "sim", state)
    runner = LocalHost(env={"PATH": f"{tmp_path / 'sim'}:/usr/bin:/bin"})
    sampler = IdleSampler(RocmBackend(runner), 0.0)
    sampler.start()
    lines: list[str] = []
    picker = GpuPicker(
        sampler,
        parse_lock_prefix(f"flock -E 75 -w 600 {tmp_path}/gpu-<id>.lock"),
        runner,
        on_wait=lines.append,
        where="hostB",
    )

    def free():
        s = load_state(state_path)
        s.set_idle(1)
        save_state(s, state_path)

    timer = threading.Timer(0.8, free)
    timer.start()
    try:
        grant = picker.acquire(wait_s=10)
        picker.release(grant)
    finally:
        timer.cancel()
        sampler.stop()
    assert any(line.startswith("waiting up to") and " s on hostB: " in line and "2 busy" in line for line in lines), (
        lines
    )


def test_the_preflight_does_not_wait_for_a_master_that_holds_its_output(tmp_path, monkeypatch):
    """The preflight's ssh becomes the host's ControlPersist master (remote/sshmux.py), which forks into
    the background; OpenSSH before 8.4 keeps the session's stdout and stderr open in it. A fake ssh
    leaves such a child behind and answers: the check returns at once (over pipes it waited for that
    child, then said the host did not answer)."""
    import os
    import signal
    import time

    from pytest_gpuverify import __version__
    from pytest_gpuverify.config.envfile import HostRow
    from pytest_gpuverify.remote.preflight import check_host

    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "ssh").write_text(
        f"#!/bin/sh\nsleep 30 &\necho $! > {tmp_path}/master.pid\n"
        f"echo hostA\necho 'gpuverify-preflight: {__version__}'\n"
    )
    (folder / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    started = time.monotonic()
    try:
        check = check_host(HostRow(host="hostA", ssh_alias="gv-a"), "env.md", 2.0, None)
    finally:
        pid = (tmp_path / "master.pid").read_text().strip() if (tmp_path / "master.pid").exists() else ""
        if pid:
            os.kill(int(pid), signal.SIGKILL)
    assert time.monotonic() - started < 5
    assert (check.hostname, check.unreachable, check.problem) == ("hostA", None, None)


def test_a_dead_workers_log_copied_twice_keeps_both_copies(tmp_path):
    """Two dead targets of one topic on one host: each copy of its raw log gets its own name."""
    from pytest_gpuverify.remote.deadlog import fetch_raw_log

    folder, out = tmp_path / "host-results", tmp_path / "here"
    folder.mkdir()
    local_sh = ["sh", "-c"]  # stands for `ssh <alias>`: the script runs here, in the folder's host
    names = []
    for content in (b"first\n", b"second\n", b"third\n"):
        (folder / "bench_t.20260101T000000Z.log").write_bytes(content)
        said = fetch_raw_log(local_sh, "hostA", str(folder), "t", out, 5.0)
        names.append(said.rsplit(" is ", 1)[1])
    assert len(set(names)) == 3, names
    assert sorted(Path(n).read_bytes() for n in names) == [b"first\n", b"second\n", b"third\n"]


def test_an_earlier_sessions_log_is_never_taken_for_a_dead_targets(tmp_path):
    """The result folder keeps an earlier session's log of the topic: a worker that died before its
    command started has none of its own, and the older log is not copied as if it were."""
    from pytest_gpuverify.remote.deadlog import fetch_raw_log

    folder, out = tmp_path / "host-results", tmp_path / "here"
    folder.mkdir()
    (folder / "bench_t.20260101T000000000000Z.log").write_bytes(b"an earlier session\n")
    since = "20260102T000000000000Z"  # the worker's stamp before its first target
    said = fetch_raw_log(["sh", "-c"], "hostA", str(folder), "t", out, 5.0, since)
    assert "the command had not started" in said and not out.exists(), said
    (folder / "bench_t.20260102T000001000000Z.log").write_bytes(b"this session\n")
    said = fetch_raw_log(["sh", "-c"], "hostA", str(folder), "t", out, 5.0, since)
    assert (out / "bench_t.20260102T000001000000Z.log").read_bytes() == b"this session\n", said
