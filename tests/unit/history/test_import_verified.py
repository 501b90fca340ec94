"""``history import`` trusts no line: each run's artifact (real files that pass ``gpuverify check`` without a
GPU, tests/support/store_artifacts.py) is found and verified as ``history add`` verifies it, and a run that
fails is refused with one line naming the export's file and line; the others are imported."""

from __future__ import annotations

import json
import shutil
import subprocess
from contextlib import closing
from pathlib import Path

import pytest
from store_artifacts import never_ran

from pytest_gpuverify.cli.main import main
from pytest_gpuverify.history.db import connect
from pytest_gpuverify.history.store import count, runs


@pytest.fixture
def exported(tmp_path, capsys) -> dict:
    """Three artifacts added to a store, and its export."""
    arts = [never_ran(tmp_path / "runs", n) for n in range(3)]
    store, out = tmp_path / "a.db", tmp_path / "export" / "history.jsonl"
    out.parent.mkdir()
    assert main(["history", "add", *map(str, arts), "--store", str(store)]) == 0
    assert main(["history", "export", "--store", str(store), "-o", str(out)]) == 0
    capsys.readouterr()
    return {"arts": arts, "store": store, "out": out, "lines": out.read_text().splitlines()}


def imported(tmp_path: Path, lines: list[str], *extra: str) -> tuple[int, list[str], int]:
    """(exit, stderr's lines, runs stored) of importing ``lines`` into a new store."""
    path = tmp_path / "export" / "part.jsonl"
    path.write_text("\n".join(lines) + "\n")
    store = tmp_path / f"b{len(list(tmp_path.glob('b*.db')))}.db"
    proc = subprocess.run(
        ["python3", "-m", "pytest_gpuverify.cli.main", "history", "import", str(path), "--store", str(store), *extra],
        capture_output=True,
        text=True,
    )
    with closing(connect(store)) as conn:
        return proc.returncode, proc.stderr.splitlines(), count(conn)


def test_verified_runs_are_imported_as_their_artifacts_say(exported, tmp_path):
    code, err, stored = imported(tmp_path, exported["lines"])
    assert (code, err, stored) == (0, [], 3)
    with closing(connect(exported["store"])) as a, closing(connect(tmp_path / "b0.db")) as b:
        assert runs(a) == runs(b)


def test_a_line_that_differs_from_its_artifact_is_refused_in_one_line(exported, tmp_path):
    lied = json.loads(exported["lines"][1])
    lied["verdict"] = "PASS"
    code, err, stored = imported(tmp_path, [exported["lines"][0], json.dumps(lied), exported["lines"][2]])
    assert (code, stored) == (1, 2)
    assert err == [
        f"{tmp_path / 'export' / 'part.jsonl'} line 2: refused: the line's verdict differ(s) from what its artifact "
        f"{exported['arts'][1]} says. Fix: export it again"
    ]


def test_a_tampered_or_missing_artifact_refuses_its_run(exported, tmp_path):
    tampered, gone = exported["arts"][0], exported["arts"][2]
    data = json.loads(tampered.read_text())
    data["verdict"] = "PASS"
    tampered.write_text(json.dumps(data))
    shutil.move(gone.parent, tmp_path / "elsewhere")
    code, err, stored = imported(tmp_path, exported["lines"])
    assert (code, stored) == (1, 1) and len(err) == 2, err
    assert err[0].startswith(f"{tmp_path / 'export' / 'part.jsonl'} line 1: refused: {tampered}: fails gpuverify check")
    assert err[1].endswith(
        f"line 3: refused: its artifact {gone} is not here. Fix: put its ticket folder beside the export, or "
        "name the folder that holds it with --artifacts DIR"
    )
    code, err, stored = imported(tmp_path, exported["lines"][2:], "--artifacts", str(tmp_path / "nowhere"))
    assert (code, stored) == (1, 0)
    (tmp_path / "moved").mkdir()
    shutil.move(tmp_path / "elsewhere", tmp_path / "moved" / gone.parent.name)
    assert imported(tmp_path, exported["lines"][2:], "--artifacts", str(tmp_path / "moved")) == (0, [], 1)


def test_with_allowed_signers_an_unsigned_run_is_refused(exported, tmp_path):
    key = tmp_path / "alice"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"alice {Path(str(key) + '.pub').read_text().strip()}\n")
    code, err, stored = imported(tmp_path, exported["lines"][:1], "--allowed-signers", str(allowed))
    assert (code, stored) == (1, 0)
    assert err == [
        f"{tmp_path / 'export' / 'part.jsonl'} line 1: refused: {exported['arts'][0]}: signed_by is null: the "
        f"artifact was not signed (allowed signers: {allowed})"
    ]
    code, err, _ = imported(tmp_path, exported["lines"][:1], "--allowed-signers", str(tmp_path / "none"))
    assert code == 2 and err[0].startswith(f"gpuverify history import: --allowed-signers {tmp_path / 'none'}: no such")
