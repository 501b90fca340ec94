"""Every `gpuverify` command with -o: a missing or unwritable output place is one line and exit 2,
never a traceback; merge checks everything before it copies anything."""

from __future__ import annotations

import json
import shutil

import pytest

from pytest_gpuverify.cli.main import main
from pytest_gpuverify.engine.store import store_artifact
from pytest_gpuverify.records.artifact import Artifact


@pytest.mark.parametrize("command", [["report"], ["handoff"]])
def test_an_output_file_in_a_missing_folder_is_one_line_and_exit_2(tmp_path, capsys, command):
    ticket = tmp_path / "T-1"
    ticket.mkdir()
    store_artifact(Artifact(topic="x", ts="2026-01-01T00:00:00Z"), ticket / "bench_x.json", None)
    target = tmp_path / "missing" / "out.file"
    assert main([*command, str(ticket), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"folder {target.parent} does not exist" in err and "mkdir -p" in err, err
    assert "Traceback" not in err and not target.parent.exists()
    assert main([*command, str(ticket), "-o", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_merge_copies_nothing_when_any_artifact_is_refused(tmp_path, capsys, sandbox):
    """The second shard holds a topic of the first from another run: without --keep-all the merge is
    refused before any file is copied, so no half-filled folder is left."""
    sandbox.pytest("op_tests/test_rmsnorm2d.py", ticket="S1")
    s1 = sandbox.tickets / "S1"
    s2 = tmp_path / "S2"
    shutil.copytree(s1, s2)
    data = json.loads((s2 / "bench_rmsnorm2d.json").read_text())
    data["notes"] = [*data["notes"], "another run of the topic"]  # another run: other content, still checks
    (s2 / "bench_rmsnorm2d.json").write_text(json.dumps(data))
    (s2 / "bench_extra.json").write_bytes(
        (s1 / "bench_rmsnorm2d.json").read_bytes().replace(b'"topic": "rmsnorm2d"', b'"topic": "extra"')
    )
    out = tmp_path / "deep" / "S1"  # the ticket's folder; its folders are made once the merge copies
    assert main(["merge", str(s1), str(s2), "-o", str(out)]) == 1
    said = capsys.readouterr().out
    assert "REFUSED" in said and f"nothing copied into {out}" in said, said
    assert not out.exists(), "nothing copied, no folder made"
    assert main(["merge", str(s1), "-o", str(out)]) == 0, capsys.readouterr().out
    assert (out / "bench_rmsnorm2d.json").exists()
