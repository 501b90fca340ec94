"""The `gpuverify` console script: schema, show, check."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_gpuverify.cli.main import main
from pytest_gpuverify.records.artifact import Artifact


def test_schema_is_the_artifact_json_schema(capsys):
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema == Artifact.model_json_schema()
    for field in (
        "key",
        "ts",
        "host",
        "container",
        "image",
        "gpu",
        "versions",
        "repos",
        "command",
        "imports",
        "correctness",
        "perf",
        "raw_output",
        "verdict",
        "reasons",
        "exit_code",
        "raw_output_sha256",
    ):
        assert field in schema["properties"], field


def test_a_reader_that_leaves_early_gets_no_traceback():
    """`gpuverify schema | head -1`: the reader closes the pipe; the tool ends quietly, as one SIGPIPE ends."""
    import os
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before the tool writes: its write fails (EPIPE)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", "schema"], stdout=write_end, stderr=subprocess.PIPE
    )
    os.close(write_end)
    _, err = proc.communicate(timeout=30)
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()
    assert proc.returncode == 141


def test_console_script_is_installed():
    proc = subprocess.run(["gpuverify", "schema"], capture_output=True)
    assert proc.returncode == 0 and json.loads(proc.stdout)["title"] == "Artifact"


@pytest.fixture(scope="module")
def untouched(tmp_path_factory, docker_client) -> Path:
    """One real run's ticket folder (artifact, raw log), made once for the module's tests."""
    from sandboxes import make_sandbox

    with make_sandbox(tmp_path_factory.mktemp("cli") / "host", docker_client) as box:
        proc = box.pytest("op_tests/test_gemm_a8w8.py")
        assert proc.returncode == 0, proc.stdout.decode()[-2000:]
        yield box.tickets / "T-1"


@pytest.fixture
def artifact_path(untouched: Path, tmp_path: Path) -> Path:
    """A copy of the run's files for one test to read or tamper with."""
    shutil.copytree(untouched, tmp_path / "T-1")
    return tmp_path / "T-1" / "bench_gemm_a8w8.json"


@pytest.mark.docker
def test_show_and_check_an_untouched_artifact(artifact_path, capsys):
    assert main(["show", str(artifact_path)]) == 0
    page = capsys.readouterr().out
    assert page.startswith("PASS") and "ck us" in page and "9.29366" in page
    assert main(["check", str(artifact_path)]) == 0
    assert "OK" in capsys.readouterr().out


@pytest.mark.docker
@pytest.mark.parametrize("tamper", ["perf number", "row removed", "verdict", "raw output"])
def test_check_catches_tampering(artifact_path, tamper, capsys):
    data = json.loads(artifact_path.read_text())
    if tamper == "perf number":
        data["perf"][0]["us_median"] = 1.0
    elif tamper == "row removed":
        data["perf"].pop()
    elif tamper == "verdict":
        data["verdict"] = "PASS"
        data["correctness"]["passed"] = False
    else:
        raw = artifact_path.parent / data["raw_output"]
        raw.write_text(raw.read_text().replace("9.29366", "8.29366"))
    artifact_path.write_text(json.dumps(data))
    assert main(["check", str(artifact_path)]) == 1
    assert "MISMATCH" in capsys.readouterr().out


def test_show_and_check_refuse_a_non_artifact(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_bytes(b"\xff not json")
    assert main(["show", str(bad)]) == 2
    assert main(["check", str(tmp_path / "missing.json")]) == 2
    assert "not a gpuverify artifact" in capsys.readouterr().err


@pytest.mark.docker
def test_check_of_a_run_that_never_started(sandbox, capsys):
    from pytest_gpuverify.simulator import load_state, save_state

    state = load_state(sandbox.state_path)
    for i in range(len(state.gpus)):
        state.set_busy(i)
    save_state(state, sandbox.state_path)
    sandbox.pytest("op_tests/test_gemm_a8w8.py")
    path = sandbox.tickets / "T-1" / "bench_gemm_a8w8.json"
    assert main(["check", str(path)]) == 0, capsys.readouterr().out
    data = json.loads(path.read_text())
    data["verdict"] = "PASS"
    path.write_text(json.dumps(data))
    assert main(["check", str(path)]) == 1
    assert "never ran" in capsys.readouterr().out
