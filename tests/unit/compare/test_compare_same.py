"""``gpuverify compare A.json A.json``: one artifact on both sides (one path, or two files of one sha256) is
refused with one line and the fix, exit 2, before anything is compared."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_gpuverify.cli.main import main


@pytest.fixture
def artifact(tmp_path: Path) -> Path:
    path = tmp_path / "bench_gemm.json"
    path.write_text('{"topic": "gemm", "ts": "2026-01-02T03:04:05"}\n')
    return path


def test_one_path_on_both_sides_is_refused(artifact: Path, capsys) -> None:
    assert main(["compare", str(artifact), str(artifact)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"gpuverify compare: refused: {artifact} and {artifact} are the same artifact (sha256 "
    ), err
    assert "Fix: name the base's and the head's own artifacts, or one A/B artifact alone" in err[0]


def test_a_copy_of_one_artifact_is_the_same_artifact(artifact: Path, tmp_path: Path, capsys) -> None:
    copy = tmp_path / "copy" / "bench_gemm.json"
    copy.parent.mkdir()
    shutil.copy(artifact, copy)
    assert main(["compare", str(artifact), str(copy)]) == 2
    assert "are the same artifact" in capsys.readouterr().err


def test_two_artifacts_are_not_refused_as_one(artifact: Path, tmp_path: Path, capsys) -> None:
    other = tmp_path / "bench_other.json"
    other.write_text('{"topic": "gemm", "ts": "2026-01-02T03:04:06"}\n')
    assert main(["compare", str(artifact), str(other)]) == 2  # refused by gpuverify check, not as one artifact
    err = capsys.readouterr().err
    assert "same artifact" not in err and "fails gpuverify check" in err, err
