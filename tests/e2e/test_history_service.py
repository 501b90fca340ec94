"""The ingest service (``gpuverify history serve``) on a real uvicorn on a loopback port, started as a subprocess:
runners post bundles with their upload token; only runs that pass the check and whose signature verifies are
stored, with who sent them; everything else is refused with one line and nothing is stored."""

from __future__ import annotations

import getpass
import io
import json
import os
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from ports import free_port
from store_artifacts import never_ran

from pytest_gpuverify.cli.main import main
from pytest_gpuverify.engine.signing import sign
from pytest_gpuverify.history.bundle import make_bundle
from pytest_gpuverify.history.db import connect
from pytest_gpuverify.history.session import add_session_artifacts
from pytest_gpuverify.history.store import count, runs

TOKEN = "runner-one-token-0123456789abcdef"
READ_TOKEN = "dashboard-read-token-0123456789"
ROOT = Path(__file__).resolve().parents[2]


def keypair(where: Path, name: str) -> Path:
    key = where / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return key


def signed(folder: Path, n: int, signer: str | None, key: Path | None, verdict: str | None = None) -> Path:
    """A checkable artifact (tests/support/store_artifacts.py) that names ``signer``, signed with ``key``;
    ``verdict`` edits it first (a tampered artifact, its signature made after the edit)."""
    path = never_ran(folder, n)
    data = json.loads(path.read_text())
    data["signed_by"] = signer
    if verdict:
        data["verdict"] = verdict
    path.write_text(json.dumps(data))
    if key is not None:
        assert sign(path, key) is None
    return path


@contextmanager
def running_service(root: Path, store: str, allowed: Path, *extra: str) -> Iterator[str]:
    """``gpuverify history serve`` on a free loopback port, answering /v1/health; its URL. runner-1 holds TOKEN."""
    tokens = root / "tokens"
    tokens.write_text(
        f"# runner tokens\nrunner-1 {TOKEN}\nrunner-2 another-token-0123456789abcdef write\ndashboard {READ_TOKEN} read\n"
    )
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "pytest_gpuverify.cli.main", "history", "serve", "--store", store]
    cmd += ["--allowed-signers", str(allowed), "--tokens", str(tokens), "--port", str(port), *extra]
    log_path = root / "serve.log"
    with open(log_path, "w+") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(150):
                try:
                    with urllib.request.urlopen(url + "/v1/health", timeout=2) as answer:
                        assert answer.status == 200
                        break
                except OSError:
                    assert proc.poll() is None, log_path.read_text()
                    time.sleep(0.2)
            else:
                pytest.fail("the service did not answer /v1/health in 30 s: " + log_path.read_text())
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=20)


@pytest.fixture
def service(tmp_path, store_name):
    """The service, its store ``store_name``; alice may sign."""
    keys = tmp_path / "keys"
    keys.mkdir()
    alice = keypair(keys, "alice")
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"alice {Path(str(alice) + '.pub').read_text().strip()}\n")
    with running_service(tmp_path, store_name, allowed) as url:
        yield {"url": url, "store": store_name, "alice": alice, "keys": keys, "folder": tmp_path / "runs"}


def post(url: str, data: bytes, token: str = TOKEN) -> tuple[int, str]:
    request = urllib.request.Request(
        url + "/v1/runs", data=data, method="POST", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read().decode().strip()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode().strip()


def stored(store: str) -> int:
    with closing(connect(store)) as conn:
        return count(conn)


def test_a_signed_run_is_stored_once_with_its_signer_runner_and_ci_run(service, monkeypatch, capsys):
    path = signed(service["folder"], 1, "alice", service["alice"])
    monkeypatch.setenv("GPUVERIFY_HISTORY_TOKEN", TOKEN)
    for name, value in (
        ("GITHUB_SERVER_URL", "https://github.com"),
        ("GITHUB_REPOSITORY", "o/r"),
        ("GITHUB_RUN_ID", "7"),
    ):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GPUVERIFY_RUN_URL", raising=False)
    assert main(["history", "add", "--store", service["url"], str(path)]) == 0
    assert f"{path}: added" in capsys.readouterr().out
    assert main(["history", "add", "--store", service["url"], str(path)]) == 0  # the same bundle again
    assert f"{path}: already stored" in capsys.readouterr().out
    assert post(service["url"], make_bundle(path)) == (200, "A1/bench_w.json: already stored")
    with closing(connect(service["store"])) as conn:
        (run,) = runs(conn)
    assert (run.signer, run.runner, run.ci_run_url) == ("alice", "runner-1", "https://github.com/o/r/actions/runs/7")
    assert run.artifact_path == str(path.resolve()) and run.uploaded and run.verdict == "INCONCLUSIVE"


def test_unsigned_tampered_and_wrongly_signed_runs_are_refused_in_one_line_each(service):
    folder, url = service["folder"], service["url"]
    mallory = keypair(service["keys"], "mallory")
    cases = [
        (
            signed(folder, 2, None, None),
            403,
            "A2/bench_w.json: refused: signed_by is null: the artifact was not signed",
        ),
        (
            signed(folder, 3, "alice", service["alice"], verdict="PASS"),
            422,
            "A3/bench_w.json: refused: fails gpuverify check (1 difference(s)): verdict is PASS, re-derived",
        ),
        (signed(folder, 4, "alice", mallory), 403, "A4/bench_w.json: refused: bench_w.json: the signature does not"),
        (signed(folder, 5, "mallory", mallory), 403, "A5/bench_w.json: refused: bench_w.json: the signature does not"),
    ]
    for path, status, line in cases:
        answer = post(url, make_bundle(path))
        assert answer[0] == status and answer[1].startswith(line), answer
        assert "\n" not in answer[1]
    assert stored(service["store"]) == 0


def test_a_wrong_or_missing_token_is_401_and_stores_nothing(service):
    bundle = make_bundle(signed(service["folder"], 6, "alice", service["alice"]))
    assert post(service["url"], bundle, token="not-a-token-0123456789abcdef")[0] == 401
    assert post(service["url"], bundle, token="")[0] == 401
    assert stored(service["store"]) == 0


def tar_of(*members: tuple[str, bytes, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            info.type, info.size = kind, len(data)
            if kind == tarfile.SYMTYPE:
                info.linkname, info.size = "/etc/passwd", 0
            tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    return out.getvalue()


@pytest.mark.parametrize(
    "data, why",
    [  # named ids: a gzip's bytes hold its time, and xdist's workers must collect the same names
        pytest.param(b"not a tar", "not a gzipped tar", id="not-gzip"),
        pytest.param(
            tar_of(("A1/../../evil.json", tarfile.REGTYPE, b"{}")), "a path outside the bundle's folder", id="dotdot"
        ),
        pytest.param(
            tar_of(("/abs/bench_w.json", tarfile.REGTYPE, b"{}")), "a path outside the bundle's folder", id="absolute"
        ),
        pytest.param(tar_of(("A1/bench_w.json", tarfile.SYMTYPE, b"")), "not a plain file", id="symlink"),
        pytest.param(tar_of(("A1/raw.log", tarfile.REGTYPE, b"x")), "0 artifacts", id="no-artifact"),
        pytest.param(
            tar_of(("A1/bench_w.json", tarfile.REGTYPE, b"{}"), ("B1/bench_w.json", tarfile.REGTYPE, b"{}")),
            "2 top",
            id="two-tops",
        ),
    ],
)
@pytest.mark.parametrize("store_name", ["sqlite"], indirect=True)
def test_a_bundle_that_is_not_one_is_400(service, data, why):
    status, line = post(service["url"], data)
    assert status == 400 and line.startswith("not a run's bundle: ") and why in line, (status, line)
    assert stored(service["store"]) == 0


@pytest.mark.parametrize("store_name", ["sqlite"], indirect=True)
def test_a_session_posts_its_artifacts_and_a_failure_costs_the_history_only(service, monkeypatch):
    paths = [signed(service["folder"], n, "alice", service["alice"]) for n in (7, 8)]
    monkeypatch.delenv("GPUVERIFY_HISTORY_TOKEN", raising=False)
    lines, bad = add_session_artifacts(service["url"], paths)
    assert bad and lines == [
        f"history not kept: {service['url']}: no upload token. Fix: set $GPUVERIFY_HISTORY_TOKEN to this runner's token"
    ]
    monkeypatch.setenv("GPUVERIFY_HISTORY_TOKEN", TOKEN)
    lines, bad = add_session_artifacts(service["url"], paths)
    assert not bad and lines == [f"history {service['url']}: 2 artifact(s) added, 0 already stored, 0 refused"]
    assert stored(service["store"]) == 2
    nobody = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    lines, bad = add_session_artifacts(nobody, paths)
    assert bad and len(lines) == 1 and lines[0].startswith(f"history not kept: {nobody}: not reached in 3 tries (")
    assert time.monotonic() - started >= 3.0  # paused 1 s, then 2 s, between the tries


def test_the_service_refuses_to_start_without_its_files(tmp_path, capsys):
    tokens = tmp_path / "tokens"
    tokens.write_text("runner-1 short\n")
    args = ["history", "serve", "--store", str(tmp_path / "h.db"), "--allowed-signers", str(tmp_path / "none")]
    assert main([*args, "--tokens", str(tokens)]) == 2
    assert f"{tokens}:1: runner-1's token is 5 characters. Fix: 16 or more" in capsys.readouterr().err
    tokens.write_text(f"runner-1 {TOKEN}\n")
    assert main([*args, "--tokens", str(tokens)]) == 2
    assert f"--allowed-signers {tmp_path / 'none'}: no such file. Fix:" in capsys.readouterr().err


@pytest.mark.docker
def test_a_signed_session_posts_each_artifact_as_its_target_ends(sandbox, tmp_path):
    """A real session on the simulated host, signing with its user's key, --gpu-history at the service."""
    signer = getpass.getuser()
    key = keypair(tmp_path, "id_ed25519")
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"{signer} {Path(str(key) + '.pub').read_text().strip()}\n")
    text = sandbox.env_path.read_text()
    sandbox.env_path.write_text(text + f"\n## Signing\n\n| signer | key |\n|---|---|\n| {signer} | {key} |\n")
    store = tmp_path / "history.db"
    with running_service(tmp_path, str(store), allowed) as url:
        env = {"GPUVERIFY_HISTORY_TOKEN": TOKEN, "GPUVERIFY_RUN_URL": "https://ci.example/run/1"}
        proc = sandbox.pytest("op_tests/test_rmsnorm2d.py", "--gpu-container", "none", f"--gpu-history={url}", env=env)
        out = proc.stdout.decode()
        assert proc.returncode == 0, out[-3000:]
        assert f"history {url}: 1 artifact(s) added, 0 already stored, 0 refused" in out, out[-3000:]
    with closing(connect(store)) as conn:
        (run,) = runs(conn)
    assert (run.signer, run.runner, run.ci_run_url, run.verdict) == (
        signer,
        "runner-1",
        "https://ci.example/run/1",
        "PASS",
    )
    assert run.rows and run.artifact_path.endswith("T-1/bench_rmsnorm2d.json")


# -- reads through the service: the same answers as the store's ---------------------------------------------


def get(url: str, token: str | None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode().strip()


def test_show_compare_and_report_read_through_the_service_as_from_the_store(service, tmp_path, monkeypatch, capsys):
    from commit_graph_lab import artifact_at, make_lab, stored_artifact

    from pytest_gpuverify.compare import render
    from pytest_gpuverify.compare.command import exit_code
    from pytest_gpuverify.engine.store import store_artifact
    from pytest_gpuverify.history.client import ServiceReader
    from pytest_gpuverify.history.compare import against_history
    from pytest_gpuverify.history.names import shown
    from pytest_gpuverify.history.reader import StoreReader, open_reader
    from pytest_gpuverify.history.store import insert
    from pytest_gpuverify.reporting.history_section import history_for

    lab = make_lab(tmp_path / "repo")
    store, url = service["store"], service["url"]
    with closing(connect(store)) as conn:  # c1..c10 at 10 us, c11..c20 at 12 us: one step, at the merge
        for n in range(1, 21):
            us = 10.0 if n <= 10 else 12.0
            insert(
                conn,
                stored_artifact(artifact_at(lab.repo, lab.sha[f"c{n}"], [us * (1 + 0.001 * k) for k in range(5)]), n),
            )
    head = tmp_path / "head" / "bench_gemm.json"
    head.parent.mkdir()
    art = artifact_at(lab.repo, lab.sha["c20"], [14.4] * 5, ts="2026-03-01T00:00:00Z")
    store_artifact(art, head, None)
    monkeypatch.setenv("GPUVERIFY_HISTORY_TOKEN", READ_TOKEN)  # a read token reads
    answers = {}
    for where in (store, url):
        capsys.readouterr()
        show = main(["history", "show", "gemm", "--store", where, "--ref", "main", "--repo", str(lab.repo)])
        shown_out = capsys.readouterr().out
        with closing(open_reader(where)) as reader:  # the CLI's own opener; its head needs a session to check
            result = against_history(reader, shown(where), art, str(head), "main", 3, repo=lab.repo)
        code, doc = exit_code(result.pairs), json.loads(render.as_json(result).replace(shown(where), "STORE"))
        section = history_for(where, ["gemm"], "main", lab.repo).replace(shown(where), "STORE")
        answers[where] = (show, shown_out, code, doc, section)
    assert answers[store] == answers[url]
    show, out, code, doc, section = answers[url]
    assert show == 0 and out.count("REGRESSED") == 1 and f"{lab.short('c10')}..{lab.short('c11')}" in out, out
    assert code == 1 and doc["pairs"][0]["call"] == "REGRESSED" and doc["artifacts"]["base"] == "STORE"
    assert "gemm" in section
    # paged: three runs a page, the runs and their order as the store's own, watch records and all
    with closing(StoreReader(store)) as direct:
        for asked in ({}, {"watch": False, "newest_commits": 3}, {"newest_first": True, "verdict": "PASS"}):
            through = ServiceReader(url, READ_TOKEN, page=3).runs(target="gemm", **asked)
            assert [r.model_dump() for r in through] == [r.model_dump() for r in direct.runs(target="gemm", **asked)]
            assert len(through) == 20
        # every run at one time: the pages' order by (time, id) holds ties; since takes from that time on
        assert {r.ts for r in direct.runs()} == {"2026-02-01T00:00:00Z"}
        assert len(ServiceReader(url, READ_TOKEN, page=7).runs(since="2026-02-01T00:00:00Z")) == 20
        assert ServiceReader(url, READ_TOKEN).runs(since="2026-02-01T00:00:01Z") == []
    assert ServiceReader(url, READ_TOKEN).targets() == ["gemm"]
    # a read token may not post; no token, or a bad parameter, is refused in one line
    status, line = post(url, make_bundle(signed(service["folder"], 1, "alice", service["alice"])), READ_TOKEN)
    assert (status, line) == (403, "dashboard's token may read, not post runs. Fix: give the runner a write token")
    assert get(url + "/v1/runs", None)[0] == 401
    assert get(url + "/v1/runs?limit=0", READ_TOKEN) == (400, "limit=0: not a count. Fix: a whole number, 1 or more")
    assert get(url + "/v1/runs?after=x", READ_TOKEN)[0] == 400
    monkeypatch.setenv("GPUVERIFY_HISTORY_TOKEN", "not-a-token-of-the-service")
    assert main(["history", "show", "gemm", "--store", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpuverify history show: {url}: 401 no valid token.") and err.count("\n") == 1, err


@pytest.mark.slow
def test_sixteen_writers_through_the_service_store_every_run_once_while_a_reader_answers(postgres, tmp_path):
    """16 ``history add`` processes at once post to the service on PostgreSQL: each its own two runs and one
    every writer posts (33 runs, 48 posts); a reader reads through the service throughout."""
    import threading

    from pytest_gpuverify.history.client import ServiceReader

    store = postgres.create_database(f"svc_{os.getpid()}")
    folder = tmp_path / "runs"
    own = [[never_ran(folder, w * 2 + k) for k in range(2)] for w in range(16)]
    shared = never_ran(folder, 10_000)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text("")
    with running_service(tmp_path, store, allowed, "--allow-unsigned") as url:
        env = {**os.environ, "GPUVERIFY_HISTORY_TOKEN": TOKEN}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        reads: list[tuple[int, float]] = []
        writing = threading.Event()
        writing.set()

        def reader() -> None:
            while writing.is_set():
                start = time.monotonic()
                reads.append(
                    (len(ServiceReader(url, READ_TOKEN).runs(target="w", watch=False)), time.monotonic() - start)
                )

        thread = threading.Thread(target=reader)
        thread.start()
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "pytest_gpuverify.cli.main", "history", "add", str(shared), *map(str, own[w])]
                + ["--store", url],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for w in range(16)
        ]
        results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
        writing.clear()
        thread.join(timeout=120)
    assert [rc for rc, _, _ in results] == [0] * 16, [err for _, _, err in results if err]
    assert sum(out.count(": added") for _, out, _ in results) == 33  # each run stored by one writer only
    assert sum(out.count(": already stored") for _, out, _ in results) == 15
    with closing(connect(store)) as conn:
        stored = runs(conn)
    assert (
        len(stored) == 33
        and len({r.artifact_sha256 for r in stored}) == 33
        and {r.runner for r in stored} == {"runner-1"}
    )
    seen = [n for n, _ in reads]
    assert reads and seen == sorted(seen) and seen[-1] <= 33, reads  # answers throughout, committed runs only
