"""``--gpu-sync`` against a real sshd host (tests/support/sshd_hosts.py) that keeps its own checkout, with its
tickets folder inside it and a umask of 077: what git sees is copied, gitignored files stay local
unless the run names them, the host's tickets survive every sync, modes follow the host's umask,
and a change made on the host stops the sync until --gpu-sync-overwrite, which lists what it removed."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_gpuverify.records.artifact import read_artifact

sys.path.insert(0, str(Path(__file__).parent))
from sshd_hosts import ssh_hosts, sshd_unavailable  # noqa: E402

pytestmark = pytest.mark.skipif(sshd_unavailable() is not None, reason=sshd_unavailable() or "")

IGNORED = ".env\n*.secret\ndata/\n*_local_only.py\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture(scope="module")
def setup(tmp_path_factory, docker_client):
    """hostB keeps its own clone at <root>/hostB/srv/aiter, its tickets in it; a laptop clone with
    ignored secrets and data, a committed .gitignore and a new untracked file."""
    with ssh_hosts(
        tmp_path_factory.mktemp("sshd"),
        docker_client,
        [("hostA", 1), ("hostB", 1)],
        own_checkouts={"hostB": "srv/aiter"},
        umasks={"hostB": "077"},
        tickets_in_checkout=frozenset({"hostB"}),
    ) as hosts:
        laptop = hosts.root / "laptop" / "aiter"
        laptop.parent.mkdir()
        _git(hosts.root, "clone", "-q", str(hosts.repo), str(laptop))
        (laptop / ".gitignore").write_text(IGNORED)
        _git(laptop, "add", ".gitignore")
        _git(laptop, "commit", "-qm", "ignore secrets")
        (laptop / ".env").write_text("TOKEN=abc\n")
        (laptop / "key.secret").write_text("secret\n")
        (laptop / "data").mkdir()
        (laptop / "data" / "blob.bin").write_bytes(b"\0" * (5 << 20))
        (laptop / "op_tests" / "test_gemm_local_only.py").write_bytes(
            (laptop / "op_tests" / "test_gemm_a8w8.py").read_bytes()
        )
        (laptop / "NEW.md").write_text("new, untracked\n")
        (laptop / "NEW.md").chmod(0o644)
        yield hosts, laptop


def _sync(hosts, laptop: Path, ticket: str, *extra: str):
    return hosts.pytest(
        "--gpu-host",
        "hostB",
        "--gpu-sync",
        "--gpu-allow-dirty",
        "--ticket",
        ticket,
        *extra,
        "op_tests/test_gemm_a8w8.py",
        cwd=laptop,
    )


def test_sync_copies_what_git_sees_and_keeps_the_hosts_tickets(setup):
    hosts, laptop = setup
    host = hosts["hostB"]
    r = _sync(hosts, laptop, "S1", "op_tests/test_gemm_local_only.py")
    assert r.returncode == 0, r.stdout + r.stderr
    for name in (".env", "key.secret", "data"):
        assert not (host.repo / name).exists(), f"{name} was copied"
    assert (host.repo / ".gitignore").read_text() == IGNORED  # tracked: what git sees
    assert stat.S_IMODE((host.repo / "NEW.md").stat().st_mode) == 0o600  # the host's umask, not the laptop's 0644
    assert (host.repo / "op_tests/test_gemm_local_only.py").is_file()  # ignored, but the run names it
    art = read_artifact(host.tickets / "S1" / "bench_gemm_local_only.json")
    assert art.verdict == "PASS" and art.synced is not None
    assert art.synced.ignored_copied == ["op_tests/test_gemm_local_only.py"]
    assert art.synced.host_path == str(host.repo)  # the host's own checkout, not the controller's path
    assert not any(p.startswith((".env", "key.secret", "data")) for p in art.synced.dirty_paths)
    assert "copied 1 gitignored file(s) to hostB because the run names them" in r.stdout
    # a second sync leaves the first run's artifacts in the tickets folder inside the checkout
    r = _sync(hosts, laptop, "S2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (host.tickets / "S1" / "bench_gemm_a8w8.json").is_file() and list((host.tickets / "S1").glob("*.log"))
    assert read_artifact(host.tickets / "S2" / "bench_gemm_a8w8.json").verdict == "PASS"


def test_changes_made_on_the_host_stop_the_sync_until_overwrite_which_lists_removals(setup):
    hosts, laptop = setup
    host = hosts["hostB"]
    assert _sync(hosts, laptop, "C0").returncode == 0
    edited = host.repo / "op_tests/test_rmsnorm2d.py"
    edited.write_text(edited.read_text() + "\n# edited on the host\n")
    (host.repo / "host_notes.txt").write_text("mine\n")
    (laptop / "NEW.md").unlink()
    r = _sync(hosts, laptop, "C1")
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    line = next(ln for ln in r.stderr.splitlines() if "--gpu-sync:" in ln)
    assert f"the checkout hostB:{host.repo} has changes no earlier sync made" in line
    assert "host_notes.txt" in line and "op_tests/test_rmsnorm2d.py" in line and "--gpu-sync-overwrite" in line
    assert (host.repo / "host_notes.txt").exists() and "edited on the host" in edited.read_text()
    assert (host.repo / "NEW.md").exists() and not (host.tickets / "C1").exists()

    r = _sync(hosts, laptop, "C2", "--gpu-sync-overwrite")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (host.repo / "host_notes.txt").exists() and not (host.repo / "NEW.md").exists()
    assert edited.read_bytes() == (laptop / "op_tests/test_rmsnorm2d.py").read_bytes()
    art = read_artifact(host.tickets / "C2" / "bench_gemm_a8w8.json")
    assert sorted(art.synced.removed) == ["NEW.md", "host_notes.txt"]
    assert sorted(art.synced.replaced) == ["host_notes.txt", "op_tests/test_rmsnorm2d.py"]
    assert "--gpu-sync removed 2 file(s) on hostB that the local checkout no longer has: " in r.stdout
    assert (host.tickets / "S1" / "bench_gemm_a8w8.json").is_file()  # the tickets folder is never touched
