"""How a session on GPU hosts meets ssh and its own options, against real sshd hosts
(tests/sshd_hosts.py): path-valued options given as a separate argument, a bad limit, a key that
needs a passphrase, a host Python of another version; and the summary naming the controller's copies."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_gpuverify.records.artifact import read_artifact

sys.path.insert(0, str(Path(__file__).parent))
from sshd_hosts import render_env, ssh_hosts, sshd_unavailable  # noqa: E402

pytestmark = pytest.mark.skipif(sshd_unavailable() is not None, reason=sshd_unavailable() or "")


@pytest.fixture(scope="module")
def hosts(tmp_path_factory, docker_client):
    with ssh_hosts(tmp_path_factory.mktemp("sshd"), docker_client, [("hostA", 1), ("hostB", 1)]) as started:
        (started.root / "no-checkout").mkdir()
        yield started


def test_path_options_given_apart_reach_the_hosts_and_the_summary_names_the_copies(hosts):
    junit = hosts.root / "reports" / "remote.xml"
    junit.parent.mkdir()
    junit.write_text("")  # exists here: xdist refused such an argument
    r = hosts.pytest(
        "--gpu-host",
        "hostB",
        "--gpu-env",
        str(hosts.controller_env),
        "--junitxml",
        str(junit),
        "--ticket",
        "APART",
        "op_tests/test_gemm_a8w8.py",
        cwd=hosts.root / "no-checkout",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "INTERNALERROR" not in r.stdout + r.stderr
    assert 'tests="1"' in junit.read_text()
    host_b = hosts["hostB"]
    art = read_artifact(host_b.tickets / "APART" / "bench_gemm_a8w8.json")
    assert art.verdict == "PASS" and art.container == host_b.container  # the host read its own env file
    copy = hosts.root / "controller-tickets" / "APART" / "bench_gemm_a8w8.json"
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("PASS ") and "gemm_a8w8" in ln)
    assert line.endswith(f"-> {copy}"), line  # the copy here, not the host's path
    assert copy.is_file()


def test_a_bad_limit_is_the_same_usage_error_as_in_a_local_run(hosts):
    r = hosts.pytest(
        "--gpu-host",
        "hostB",
        "--gpu-timeout",
        "soon",
        "--ticket",
        "BAD",
        "op_tests/test_gemm_a8w8.py",
        cwd=hosts.root / "no-checkout",
    )
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    assert "--gpu-timeout 'soon' is not a number of seconds" in r.stderr
    assert not (hosts["hostB"].tickets / "BAD").exists()


def test_a_key_with_a_passphrase_is_one_line_naming_the_host_and_the_fix(hosts):
    key = hosts.root / "id_passphrase"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "a passphrase", "-f", str(key)], check=True)
    with open(hosts.root / "authorized_keys", "a") as f:  # the host would take it, once unlocked
        f.write((hosts.root / "id_passphrase.pub").read_text())
    config = hosts.root / "ssh_config_passphrase"
    config.write_text(hosts.ssh_config.read_text().replace(f"IdentityFile {hosts.key}\n", f"IdentityFile {key}\n"))
    environ = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
    environ.update(hosts.controller_environ(GPUVERIFY_SSH_CONFIG=str(config)))
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--gpu-verify",
            "--gpu-host",
            "hostB",
            "--ticket",
            "KEY",
            "op_tests/test_gemm_a8w8.py",
        ],
        cwd=hosts.root / "no-checkout",
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "hostB" in ln]
    assert len(lines) == 1, r.stderr
    assert "host hostB: `ssh gv13-hostB` could not log in without a prompt" in lines[0]
    assert "ssh-add" in lines[0] and "check the host is up" not in lines[0]


def _other_python() -> str:
    mine = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    found = [
        p
        for p in sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3.*") + glob.glob("/usr/bin/python3.*"))
        if Path(p).name.startswith("python3.") and Path(p).name != mine and Path(p).name[8:].isdigit()
    ]
    if not found:
        pytest.skip("no Python of another version on this machine")
    return found[-1]


def test_a_host_python_of_another_version_is_one_line(hosts):
    python = _other_python()
    env = hosts.root / "controller-env-other-python.md"
    env.write_text(
        render_env(hosts.hosts, None, hosts.root / "controller-tickets", hosts.repo.parent, hosts.repo, python)
    )
    r = hosts.pytest(
        "--gpu-host",
        "hostB",
        "--ticket",
        "PY",
        "op_tests/test_gemm_a8w8.py",
        cwd=hosts.root / "no-checkout",
        env={"GPUVERIFY_ENV": str(env)},
    )
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    version = subprocess.run(
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True
    ).stdout.strip()
    lines = [ln for ln in r.stderr.splitlines() if "hostB" in ln]
    assert len(lines) == 1, r.stderr
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert f"host hostB: {python} there is Python {version}, the controller runs Python {mine}" in lines[0]
    assert f"Fix: put a Python {mine}" in lines[0]
