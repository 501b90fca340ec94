"""`gpuverify check` cannot be talked round (issue 11, items 2 and 3): each kind of tampering is named,
and signed artifacts fail verification after any one-byte edit, with real ssh-keygen.

The artifacts are the engine's own (real pytest session, real container, simulated GPUs), made once per
module: T-1 unsigned (aiter op_tests, an inner pytest run with JUnit, declared bench commands), T-2
signed through the env file's Signing table with an ed25519 key made here. Each test edits a copy.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_gpuverify.engine.artifact import SCHEMA_VERSION, read_artifact
from pytest_gpuverify.cli.check import UNVERIFIED
from pytest_gpuverify.cli.main import main

pytestmark = pytest.mark.docker

SIGNER = getpass.getuser()
GEMM, CRASH, TRITON = "op_tests/test_gemm_a8w8.py", "op_tests/test_crash.py", "op_tests/triton_tests/test_triton_mismatch.py"


@pytest.fixture(scope="module")
def made(tmp_path_factory, docker_client) -> dict[str, Path]:
    from conftest import make_sandbox
    from test_e2e_kinds import declare
    from pytest_gpuverify.cli import demo

    root = tmp_path_factory.mktemp("tamper")
    key = root / "keys" / "id_ed25519"
    key.parent.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gpuverify-test", "-f", str(key)], check=True)
    allowed = root / "allowed_signers"
    allowed.write_text(f'{SIGNER} namespaces="gpuverify" {Path(str(key) + ".pub").read_text().strip()}\n')
    with make_sandbox(root / "host", docker_client) as box:
        demo.install_pytest(box.client, box.container)
        declare(box.repo, "bench_harness")
        box.pytest(GEMM, CRASH, TRITON, "gpuverify.toml", ticket="T-1")
        text = box.env_path.read_text()
        box.env_path.write_text(text + f"\n## Signing\n\n| signer | key |\n|---|---|\n| {SIGNER} | {key} |\n")
        box.pytest(GEMM, TRITON, ticket="T-2")
        box.pytest(GEMM, ticket="T-2")  # the first artifact of the topic is moved aside, its signature with it
        tickets = box.tickets
    paths = {
        "pass": tickets / "T-1" / "bench_gemm_a8w8.json",
        "crash": tickets / "T-1" / "bench_crash.json",
        "pytest kind": tickets / "T-1" / "bench_triton_mismatch.json",
        "bench": tickets / "T-1" / "bench_softmax-perf-report.json",
        "bench ab": tickets / "T-1" / "bench_hillclimb-ab.json",
        "signed": tickets / "T-2" / "bench_gemm_a8w8.json",
        "signed pytest kind": tickets / "T-2" / "bench_triton_mismatch.json",
        "allowed": allowed,
    }
    arts = {case: read_artifact(p) for case, p in paths.items() if case != "allowed"}
    assert arts["pass"].verdict == "PASS" and arts["crash"].exit_code == 1 and arts["pytest kind"].junit_xml
    assert arts["bench"].verdict == "PASS" and arts["bench"].target.command == ["python3", "bench/bench_softmax.py"]
    assert arts["signed"].signed_by == SIGNER and arts["pass"].signed_by is None
    assert arts["signed"].host_gpus == 4 and arts["signed"].schema_version == SCHEMA_VERSION
    return paths


def copy_of(made, case: str, tmp_path: Path) -> Path:
    here = tmp_path / case.replace(" ", "_")
    shutil.copytree(made[case].parent, here)
    return here / made[case].name


def check(path: Path, capsys, *extra: str) -> tuple[int, list[str], str]:
    rc = main(["check", str(path), *extra])
    out = capsys.readouterr().out
    return rc, [line.removeprefix("MISMATCH ") for line in out.splitlines() if line.startswith("MISMATCH ")], out


def edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def raw_of(path: Path) -> Path:
    return path.parent / json.loads(path.read_text())["raw_output"]


def reseal(path: Path) -> None:
    """The log edited, and the artifact's sha256 and size made to match it: consistent by construction."""
    raw = raw_of(path)
    edit(path, lambda d: d.update(raw_output_sha256=hashlib.sha256(raw.read_bytes()).hexdigest(),
                                  raw_output_bytes=raw.stat().st_size))


@pytest.mark.parametrize("case", ["pass", "crash", "pytest kind", "bench", "bench ab", "signed", "signed pytest kind"])
def test_an_untouched_artifact_checks_out(made, case, tmp_path, capsys):
    path = copy_of(made, case, tmp_path)
    rc, mismatches, out = check(path, capsys)
    assert rc == 0 and not mismatches, out
    assert (UNVERIFIED in out) == case.startswith("signed")


def test_the_raw_log_ends_with_the_engines_trailer(made):
    last = raw_of(made["crash"]).read_bytes().splitlines()[-1]
    assert last.startswith(b"[gpuverify] run ended: ")
    fields = json.loads(last.split(b": ", 1)[1])
    assert fields["exit_code"] == 1 and fields["container"] and fields["gpus"] == [read_artifact(made["crash"]).gpu.index]


def set_gpu(d: dict, index: int) -> None:
    d["gpu"]["index"] = d["gpu"]["hip_index"] = index
    d["gpus"][0] = dict(d["gpu"])


def strip_trailer(path: Path) -> None:
    raw = raw_of(path)
    raw.write_bytes(b"".join(raw.read_bytes().splitlines(keepends=True)[:-1]))


def forge_trailer(path: Path, **fields) -> None:
    raw = raw_of(path)
    lines = raw.read_bytes().splitlines(keepends=True)
    prefix, data = lines[-1].split(b": ", 1)
    lines[-1] = prefix + b": " + json.dumps({**json.loads(data), **fields}).encode() + b"\n"
    raw.write_bytes(b"".join(lines))


# (case, edit of the artifact (and of files beside it), a line `check` must print).
TAMPERINGS = {
    "run removed": ("pass", lambda p: edit(p, lambda d: d.pop("run")), "schema: field run is missing (schema 4 has it)"),
    "run removed from a schema-2 artifact": (
        "pass", lambda p: edit(p, lambda d: (d.pop("run"), d.pop("host_gpus"), d.pop("signed_by"),
                                             d["target"].pop("command"), d.update(schema_version=2))),
        "schema: field run is missing (schema 2 has it)",
    ),
    "run set to null": ("pass", lambda p: edit(p, lambda d: d.update(run=None)), "schema: field run is null"),
    "a field of the run record removed": (
        "crash", lambda p: edit(p, lambda d: d["run"].pop("exit_code")), "schema: field run.exit_code is missing",
    ),
    "an unknown schema_version": (
        "pass", lambda p: edit(p, lambda d: d.update(schema_version=99)), "schema: schema_version is 99",
    ),
    "a field the schema does not have": (
        "pass", lambda p: edit(p, lambda d: d.update(approved_by="me")), "schema: field approved_by is not in schema 4",
    ),
    "topic and ts only": (
        "pass", lambda p: p.write_text('{"topic": "x", "ts": "2026-01-01T00:00:00Z"}'), "schema: schema_version is None",
    ),
    "exit_code edited with the verdict": (
        "crash", lambda p: edit(p, lambda d: (d["run"].update(exit_code=0), d.update(exit_code=0))),
        "run.exit_code is 0, the raw output's trailer says 1",
    ),
    "repos sha edited": (
        "pass", lambda p: edit(p, lambda d: d["repos"][0].update(sha="1" * 40)), f"repos[0].sha {'1' * 40} is not a commit of",
    ),
    "repos dirty flag edited": (
        "pass", lambda p: edit(p, lambda d: d["repos"][0].update(dirty=True)), "repos[0].dirty is true, but it lists no dirty_paths",
    ),
    "repos path edited": (
        "pass", lambda p: edit(p, lambda d: d["repos"][0].update(path="/elsewhere/aiter")), "target.path ",
    ),
    "gpu index beyond the host": (
        "pass", lambda p: edit(p, lambda d: set_gpu(d, 7)), "gpus[0].index 7 is not a GPU of a host with 4 GPUs",
    ),
    "gpu index edited in range": (
        "pass", lambda p: edit(p, lambda d: set_gpu(d, (d["gpu"]["index"] + 1) % 4)), "env.HIP_VISIBLE_DEVICES is ",
    ),
    "gpu edited but not gpus": ("pass", lambda p: edit(p, lambda d: d["gpu"].update(name="MI355X")), "gpu is not gpus[0]"),
    "host_gpus cleared": ("pass", lambda p: edit(p, lambda d: d.update(host_gpus=None)), "host_gpus is null"),
    "container edited": (
        "pass", lambda p: edit(p, lambda d: d.update(container="aiter-other")), "container is 'aiter-other', the raw output's trailer says",
    ),
    "host edited": ("pass", lambda p: edit(p, lambda d: d.update(host="mi355x-99")), "host is 'mi355x-99', the raw output's trailer says"),
    "command edited": (
        "pass", lambda p: edit(p, lambda d: d.update(command=d["command"] + " -d fp8")), "command is ",
    ),
    "target args edited": (
        "pytest kind", lambda p: edit(p, lambda d: d["target"].update(args=["-k", "easy"])), "command is ",
    ),
    "declared command edited": (
        "bench", lambda p: edit(p, lambda d: d["target"].update(command=["python3", "bench/other.py"])), "command is ",
    ),
    "versions edited against the record": (
        "pass", lambda p: edit(p, lambda d: d["versions"].update(torch="2.8.0")), "versions.torch is '2.8.0', but run.unknowns says",
    ),
    "versions of another vendor": (
        "pass", lambda p: edit(p, lambda d: d["versions"].update(cuda="12.4")), "versions.cuda is '12.4' on an AMD GPU",
    ),
    "imports pointed outside the worktree": (
        "pass", lambda p: edit(p, lambda d: d["imports"].update(aiter="/usr/lib/python3/aiter/__init__.py")),
        "imports.aiter is /usr/lib/python3/aiter/__init__.py, outside the worktree",
    ),
    "imports removed": ("pass", lambda p: edit(p, lambda d: d.update(imports={})), "imports has [], a aiter-op-test target checks"),
    "env PYTHONPATH edited": (
        "pass", lambda p: edit(p, lambda d: d["env"].update(PYTHONPATH="/opt/aiter")),
        "workdir /workspace/aiter is not in the worktree /opt/aiter that PYTHONPATH names",
    ),
    "env variable added": (
        "pass", lambda p: edit(p, lambda d: d["env"].update(LD_PRELOAD="/x.so")), "env.LD_PRELOAD is not a variable",
    ),
    "cache dir edited": (
        "pass", lambda p: edit(p, lambda d: d["cache_dirs"].update(AITER_JIT_DIR="/tmp/jit")), "env.AITER_JIT_DIR is ",
    ),
    "workdir edited": ("pass", lambda p: edit(p, lambda d: d.update(workdir="/tmp")), "workdir /tmp is not in the worktree"),
    "topic edited": ("pass", lambda p: edit(p, lambda d: d.update(topic="gemm_fast")), "topic is 'gemm_fast', but the file is"),
    "finished before it started": (
        "pass", lambda p: edit(p, lambda d: d.update(finished_ts="2000-01-01T00:00:00.000Z")), "finished_ts 2000-01-01",
    ),
    "raw_output_bytes edited": ("pass", lambda p: edit(p, lambda d: d.update(raw_output_bytes=1)), "raw output is "),
    "the log's trailer removed, sha256 matched": (
        "crash", lambda p: (strip_trailer(p), reseal(p)), "the raw output does not end with the engine's trailer line",
    ),
    "exit code edited in the artifact and the log's trailer": (
        "pytest kind", lambda p: (edit(p, lambda d: (d["run"].update(exit_code=0), d.update(exit_code=0))),
                                  forge_trailer(p, exit_code=0), reseal(p)),
        "run.exit_code is 0, but the JUnit report has ",
    ),
    "the JUnit report removed": ("pytest kind", lambda p: (p.parent / read_artifact(p).junit_xml).unlink(), "junit_xml "),
    "never-ran artifact given a command": (
        "crash", lambda p: edit(p, lambda d: (d["run"].update(ran=False), d.update(raw_output=None))),
        "command is recorded, but the command never ran",
    ),
}


@pytest.mark.parametrize("name", list(TAMPERINGS))
def test_check_names_each_tampering(made, name, tmp_path, capsys):
    case, change, expected = TAMPERINGS[name]
    path = copy_of(made, case, tmp_path)
    change(path)
    rc, mismatches, out = check(path, capsys)
    assert rc == 1 and any(line.startswith(expected) for line in mismatches), (expected, out)


def test_a_topic_and_ts_file_names_every_missing_field(made, tmp_path, capsys):
    path = tmp_path / "bench_x.json"
    path.write_text('{"schema_version": 3, "topic": "x", "ts": "2026-01-01T00:00:00Z"}')
    rc, mismatches, out = check(path, capsys)
    assert rc == 1 and "schema: field run is missing (schema 3 has it)" in mismatches
    assert "schema: field verdict is missing (schema 3 has it)" in mismatches and "OK" not in out


def test_log_and_sha256_edited_together_are_caught_only_by_the_signature(made, tmp_path, capsys):
    path = copy_of(made, "signed", tmp_path)
    raw = raw_of(path)
    raw.write_bytes(raw.read_bytes().replace(b"\n", b"\n ", 1))  # one space more: every number stays
    reseal(path)
    rc, mismatches, out = check(path, capsys)
    assert rc == 0 and not mismatches and UNVERIFIED in out, out  # consistency alone cannot tell
    rc, mismatches, out = check(path, capsys, "--allowed-signers", str(made["allowed"]))
    assert rc == 1 and any(m.startswith(f"{path.name}: the signature does not verify as {SIGNER}") for m in mismatches), out
    assert any(m.startswith(f"{raw.name}: the signature does not verify") for m in mismatches), out


def test_signed_artifacts_verify(made, tmp_path, capsys):
    for case in ("signed", "signed pytest kind"):
        path = copy_of(made, case, tmp_path)
        files = [path, raw_of(path)] + ([path.parent / read_artifact(path).junit_xml] if case.endswith("kind") else [])
        assert all(Path(str(f) + ".sig").exists() for f in files)
        rc, mismatches, out = check(path, capsys, "--allowed-signers", str(made["allowed"]))
        assert rc == 0 and f"signed by {SIGNER}, verified" in out, out


def test_the_earlier_artifact_of_a_topic_keeps_its_signature(made, capsys):
    earlier = [p for p in made["signed"].parent.glob("bench_gemm_a8w8.*.json")]
    assert len(earlier) == 1 and Path(str(earlier[0]) + ".sig").exists()
    rc, _, out = check(earlier[0], capsys, "--allowed-signers", str(made["allowed"]))
    assert rc == 0, out


def byte_positions(size: int) -> list[int]:
    return sorted({0, 1, size // 7, size // 3, size // 2, 2 * size // 3, size - 2, size - 1})


@pytest.mark.parametrize("which", ["artifact", "raw log", "junit"])
def test_any_one_byte_edit_fails_verification(made, which, tmp_path, capsys):
    original = copy_of(made, "signed pytest kind", tmp_path / "original")
    art = read_artifact(original)
    name = {"artifact": original.name, "raw log": art.raw_output, "junit": art.junit_xml}[which]
    size = (original.parent / name).stat().st_size
    for i in byte_positions(size):
        path = copy_of(made, "signed pytest kind", tmp_path / f"at{i}")
        target = path.parent / name
        data = bytearray(target.read_bytes())
        data[i] ^= 0x01
        target.write_bytes(bytes(data))
        rc, mismatches, out = check(path, capsys, "--allowed-signers", str(made["allowed"]))
        assert rc == 1 and any(m.startswith(f"{name}: the signature does not verify") for m in mismatches), (i, out)


def test_a_signature_by_another_key_fails(made, tmp_path, capsys):
    path = copy_of(made, "signed", tmp_path)
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    subprocess.run(["ssh-keygen", "-Y", "sign", "-f", str(other), "-n", "gpuverify", str(path)], check=True,
                   capture_output=True, input=b"y\n")
    rc, mismatches, out = check(path, capsys, "--allowed-signers", str(made["allowed"]))
    assert rc == 1 and any(m.startswith(f"{path.name}: the signature does not verify") for m in mismatches), out


def test_an_unsigned_artifact_fails_a_signature_check(made, tmp_path, capsys):
    path = copy_of(made, "pass", tmp_path)
    rc, mismatches, out = check(path, capsys, "--allowed-signers", str(made["allowed"]))
    assert rc == 1 and mismatches == ["signed_by is null: the artifact was not signed"], out


def test_a_signing_row_with_no_key_stops_the_run_before_any_gpu(sandbox):
    text = sandbox.env_path.read_text()
    sandbox.env_path.write_text(text + f"\n## Signing\n\n| signer | key |\n|---|---|\n| {SIGNER} | /nonexistent/id_ed25519 |\n")
    proc = sandbox.pytest(GEMM)
    err = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode != 0 and "section 'Signing', row 1" in err and "key /nonexistent/id_ed25519 is not a readable file" in err, err
    assert not (sandbox.tickets / "T-1").exists() and sandbox.exec_ids() == []


def test_a_two_gpu_fixture_run_checks_out(sandbox, capsys):
    """`kernel_container.run` on two locked GPUs: a declared command (kind bench), two GPUs in env and trailer."""
    from test_e2e_kinds import commit
    from test_e2e_shared_host import FIXTURE_TEST

    (sandbox.repo / "tests").mkdir()
    (sandbox.repo / "tests" / "test_fixture_use.py").write_text(FIXTURE_TEST)
    commit(sandbox.repo, "a test using the fixtures")
    proc = sandbox.pytest("tests/test_fixture_use.py")
    path = sandbox.tickets / "T-1" / "bench_fixture_gemm.json"
    assert path.exists(), proc.stdout.decode()[-2000:]
    assert len(read_artifact(path).gpus) == 2
    rc, mismatches, out = check(path, capsys)
    assert rc == 0 and not mismatches, out
