"""`gpuverify check` cannot be talked round: each kind of tampering is named,
and signed artifacts fail verification after any one-byte edit, with real ssh-keygen.

The artifacts are the engine's own (real pytest session, real container, simulated GPUs), made once per
module: T-1 unsigned (aiter op_tests, an inner pytest run with JUnit, declared bench commands), T-2
signed through the env file's Signing table with an ed25519 key made here. Each test edits a copy.
"""

from __future__ import annotations

import getpass
import json
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from check_edits import (
    check,
    copy_of,
    edit,
    forge_trailer,
    move_timeline,
    moved,
    raw_of,
    reseal,
    set_gpu,
    strip_trailer,
)

from pytest_gpuverify.cli.check import UNVERIFIED
from pytest_gpuverify.common.clock import parse_iso_utc
from pytest_gpuverify.records.artifact import SCHEMA_VERSION, read_artifact

pytestmark = pytest.mark.docker

SIGNER = getpass.getuser()
GEMM, CRASH, TRITON = (
    "op_tests/test_gemm_a8w8.py",
    "op_tests/test_crash.py",
    "op_tests/triton_tests/test_triton_mismatch.py",
)


@pytest.fixture(scope="module")
def made(tmp_path_factory, docker_client) -> dict[str, Path]:
    from kernel_repos import declare
    from sandboxes import make_sandbox

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
    art = read_artifact(made["crash"])
    assert fields["exit_code"] == 1 and fields["container"] and fields["gpus"] == [art.gpu.index]
    # sealed once the GPUs were let go of: the whole timeline, as the artifact has it
    assert fields["timeline"] == art.timeline.model_dump() and fields["timeline"]["lock_released"]


# (case, edit of the artifact (and of files beside it), a line `check` must print).
TAMPERINGS = {
    "run removed": (
        "pass",
        lambda p: edit(p, lambda d: d.pop("run")),
        f"schema: field run is missing (schema {SCHEMA_VERSION} has it)",
    ),
    "run removed from a schema-2 artifact": (
        "pass",
        lambda p: edit(
            p,
            lambda d: (
                d.pop("run"),
                d.pop("host_gpus"),
                d.pop("signed_by"),
                d["target"].pop("command"),
                d.update(schema_version=2),
            ),
        ),
        "schema: field run is missing (schema 2 has it)",
    ),
    "run set to null": ("pass", lambda p: edit(p, lambda d: d.update(run=None)), "schema: field run is null"),
    "a field of the run record removed": (
        "crash",
        lambda p: edit(p, lambda d: d["run"].pop("exit_code")),
        "schema: field run.exit_code is missing",
    ),
    "an unknown schema_version": (
        "pass",
        lambda p: edit(p, lambda d: d.update(schema_version=99)),
        "schema: schema_version is 99",
    ),
    "a field the schema does not have": (
        "pass",
        lambda p: edit(p, lambda d: d.update(approved_by="me")),
        f"schema: field approved_by is not in schema {SCHEMA_VERSION}",
    ),
    "topic and ts only": (
        "pass",
        lambda p: p.write_text('{"topic": "x", "ts": "2026-01-01T00:00:00Z"}'),
        "schema: schema_version is None",
    ),
    "exit_code edited with the verdict": (
        "crash",
        lambda p: edit(p, lambda d: (d["run"].update(exit_code=0), d.update(exit_code=0))),
        "run.exit_code is 0, the raw output's trailer says 1",
    ),
    "repos sha edited": (
        "pass",
        lambda p: edit(p, lambda d: d["repos"][0].update(sha="1" * 40)),
        f"repos[0].sha {'1' * 40} is not a commit of",
    ),
    "repos dirty flag edited": (
        "pass",
        lambda p: edit(p, lambda d: d["repos"][0].update(dirty=True)),
        "repos[0].dirty is true, but it lists no dirty_paths",
    ),
    "repos path edited": (
        "pass",
        lambda p: edit(p, lambda d: d["repos"][0].update(path="/elsewhere/aiter")),
        "target.path ",
    ),
    "gpu index beyond the host": (
        "pass",
        lambda p: edit(p, lambda d: set_gpu(d, 7)),
        "gpus[0].index 7 is not a GPU of a host with 4 GPUs",
    ),
    "gpu index edited in range": (
        "pass",
        lambda p: edit(p, lambda d: set_gpu(d, (d["gpu"]["index"] + 1) % 4)),
        "env.HIP_VISIBLE_DEVICES is ",
    ),
    "gpu edited but not gpus": (
        "pass",
        lambda p: edit(p, lambda d: d["gpu"].update(name="MI355X")),
        "gpu is not gpus[0]",
    ),
    "host_gpus cleared": ("pass", lambda p: edit(p, lambda d: d.update(host_gpus=None)), "host_gpus is null"),
    "container edited": (
        "pass",
        lambda p: edit(p, lambda d: d.update(container="aiter-other")),
        "container is 'aiter-other', the raw output's trailer says",
    ),
    "host edited": (
        "pass",
        lambda p: edit(p, lambda d: d.update(host="mi355x-99")),
        "host is 'mi355x-99', the raw output's trailer says",
    ),
    "command edited": (
        "pass",
        lambda p: edit(p, lambda d: d.update(command=d["command"] + " -d fp8")),
        "command is ",
    ),
    "target args edited": (
        "pytest kind",
        lambda p: edit(p, lambda d: d["target"].update(args=["-k", "easy"])),
        "command is ",
    ),
    "declared command edited": (
        "bench",
        lambda p: edit(p, lambda d: d["target"].update(command=["python3", "bench/other.py"])),
        "command is ",
    ),
    "versions edited against the record": (
        "pass",
        lambda p: edit(p, lambda d: d["versions"].update(torch="2.8.0")),
        "versions.torch is '2.8.0', but run.unknowns says",
    ),
    "versions of another vendor": (
        "pass",
        lambda p: edit(p, lambda d: d["versions"].update(cuda="12.4")),
        "versions.cuda is '12.4' on an AMD GPU",
    ),
    "imports pointed outside the worktree": (
        "pass",
        lambda p: edit(p, lambda d: d["imports"].update(aiter="/usr/lib/python3/aiter/__init__.py")),
        "imports.aiter is /usr/lib/python3/aiter/__init__.py, outside the worktree",
    ),
    "imports removed": (
        "pass",
        lambda p: edit(p, lambda d: d.update(imports={})),
        "imports has [], a aiter-op-test target checks",
    ),
    "env PYTHONPATH edited": (
        "pass",
        lambda p: edit(p, lambda d: d["env"].update(PYTHONPATH="/opt/aiter")),
        "workdir /workspace/aiter is not in the worktree /opt/aiter that PYTHONPATH names",
    ),
    "env variable added": (
        "pass",
        lambda p: edit(p, lambda d: d["env"].update(LD_PRELOAD="/x.so")),
        "env.LD_PRELOAD is not a variable",
    ),
    "cache dir edited": (
        "pass",
        lambda p: edit(p, lambda d: d["cache_dirs"].update(AITER_JIT_DIR="/tmp/jit")),
        "env.AITER_JIT_DIR is ",
    ),
    "workdir edited": (
        "pass",
        lambda p: edit(p, lambda d: d.update(workdir="/tmp")),
        "workdir /tmp is not in the worktree",
    ),
    "topic edited": (
        "pass",
        lambda p: edit(p, lambda d: d.update(topic="gemm_fast")),
        "topic is 'gemm_fast', but the file is",
    ),
    "timeline moved 30 minutes": ("pass", lambda p: move_timeline(p, 1800), "timeline.lock_taken is "),
    "key changed to another ticket's": ("pass", lambda p: edit(p, lambda d: d.update(key="T-2")), "key is 'T-2', but "),
    "finished before it started": (
        "pass",
        lambda p: edit(p, lambda d: d.update(finished_ts="2000-01-01T00:00:00.000Z")),
        "finished_ts 2000-01-01",
    ),
    "raw_output_bytes edited": ("pass", lambda p: edit(p, lambda d: d.update(raw_output_bytes=1)), "raw output is "),
    "the log's trailer removed, sha256 matched": (
        "crash",
        lambda p: (strip_trailer(p), reseal(p)),
        "the raw output does not end with the engine's trailer line",
    ),
    "exit code edited in the artifact and the log's trailer": (
        "pytest kind",
        lambda p: (
            edit(p, lambda d: (d["run"].update(exit_code=0), d.update(exit_code=0))),
            forge_trailer(p, exit_code=0),
            reseal(p),
        ),
        "run.exit_code is 0, but the JUnit report has ",
    ),
    "the JUnit report removed": (
        "pytest kind",
        lambda p: (p.parent / read_artifact(p).junit_xml).unlink(),
        "junit_xml ",
    ),
    "never-ran artifact given a command": (
        "crash",
        lambda p: edit(p, lambda d: (d["run"].update(ran=False), d.update(raw_output=None))),
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


def test_key_must_name_the_ticket_folder_the_artifact_lies_in(made, tmp_path, capsys):
    path = copy_of(made, "pass", tmp_path)
    edit(path, lambda d: d.update(key="T-2"))  # another ticket's key
    rc, mismatches, out = check(path, capsys)
    assert rc == 1 and mismatches == ["key is 'T-2', but the artifact lies in folder 'T-1'"], out
    moved_folder = path.parent.rename(path.parent.with_name("T-2")) / path.name  # key T-2, and in T-2's folder
    assert check(moved_folder, capsys)[0] == 0
    edit(moved_folder, lambda d: d.update(key=None))  # written without a ticket: any folder holds it
    rc, mismatches, out = check(moved_folder, capsys)
    assert rc == 0 and not mismatches, out


@pytest.mark.parametrize("minutes", [30, -30])
def test_a_timeline_moved_out_of_its_run_is_named_though_the_trailer_agrees(made, minutes, tmp_path, capsys):
    path = copy_of(made, "pass", tmp_path)
    timeline = move_timeline(path, minutes * 60)
    forge_trailer(path, timeline=timeline)
    reseal(path)
    rc, mismatches, out = check(path, capsys)
    art = read_artifact(path)
    if minutes > 0:
        assert f"timeline.lock_taken {timeline['lock_taken']} is after finished_ts {art.finished_ts}" in mismatches, out
        assert (
            f"timeline.collected {timeline['collected']} is after ts {art.ts}: the session had its targets before"
            in mismatches
        ), out
    else:
        assert f"timeline.lock_released {timeline['lock_released']} is before ts {art.ts}" in mismatches, out
    assert rc == 1 and all(m.startswith("timeline.") and "trailer" not in m for m in mismatches), out


def test_a_timeline_moved_within_its_run_disagrees_with_the_trailer(made, tmp_path, capsys):
    path = copy_of(made, "pass", tmp_path)
    sealed = json.loads(path.read_text())["timeline"]
    timeline = move_timeline(path, 0.5)  # within the slack of ts..finished_ts: only the trailer tells
    rc, mismatches, out = check(path, capsys)
    assert rc == 1 and sorted(mismatches) == sorted(
        f"timeline.{k} is {v}, the raw output's trailer says {sealed[k]}" for k, v in timeline.items() if v
    ), out


# (what is moved an hour, a line `check` must print); the duration_s the engine measured stays
HOUR_MOVES = {
    "ts earlier": ((-3600, 0), "ts {ts} is not the raw output's stamp "),
    "finished_ts later": ((0, 3600), "ts to finished_ts is 36"),
    "both later": ((3600, 3600), "timeline.pick_started {pick_started} is before ts {ts}"),
    "both earlier": ((-3600, -3600), "timeline.pick_started {pick_started} is after finished_ts {finished_ts}"),
}


@pytest.mark.parametrize("name", list(HOUR_MOVES))
def test_ts_or_finished_ts_moved_an_hour_is_named(made, name, tmp_path, capsys):
    (start, end), expected = HOUR_MOVES[name]
    path = copy_of(made, "pass", tmp_path)
    edit(path, lambda d: d.update(ts=moved(d["ts"], start), finished_ts=moved(d["finished_ts"], end)))
    rc, mismatches, out = check(path, capsys)
    d = json.loads(path.read_text())
    expected = expected.format(ts=d["ts"], finished_ts=d["finished_ts"], pick_started=d["timeline"]["pick_started"])
    assert rc == 1 and any(m.startswith(expected) for m in mismatches), (expected, out)


def test_ts_must_be_the_raw_logs_stamp(made, tmp_path, capsys):
    """ts moved an hour back with duration_s and the session's collected: the interval still holds the
    timeline, after collected; the log's name does not agree."""
    path = copy_of(made, "pass", tmp_path)
    stamp = raw_of(path).name.rsplit(".", 2)[-2]
    edit(
        path,
        lambda d: (
            d.update(ts=moved(d["ts"], -3600), duration_s=d["duration_s"] + 3600),
            d["timeline"].update(collected=moved(d["timeline"]["collected"], -3600)),
        ),
    )
    forge_trailer(path, timeline=json.loads(path.read_text())["timeline"])
    reseal(path)
    rc, mismatches, out = check(path, capsys)
    ts = json.loads(path.read_text())["ts"]
    at = datetime.strptime(stamp, "%Y%m%dT%H%M%S%fZ").isoformat(timespec="microseconds")
    assert rc == 1 and mismatches == [f"ts {ts} is not the raw output's stamp {at}Z"], out


def test_a_log_sealed_before_the_timeline_checks_as_before(made, tmp_path, capsys):
    path = copy_of(made, "pass", tmp_path)
    raw = raw_of(path)
    lines = raw.read_bytes().splitlines(keepends=True)
    prefix, data = lines[-1].split(b": ", 1)
    fields = json.loads(data)
    fields.pop("timeline")
    raw.write_bytes(b"".join(lines[:-1]) + prefix + b": " + json.dumps(fields).encode() + b"\n")
    reseal(path)
    rc, mismatches, out = check(path, capsys)
    assert rc == 0 and not mismatches, out
    move_timeline(path, 0.5)  # what only the sealed timeline could tell
    assert check(path, capsys)[0] == 0


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
    assert rc == 1 and any(
        m.startswith(f"{path.name}: the signature does not verify as {SIGNER}") for m in mismatches
    ), out
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
    subprocess.run(
        ["ssh-keygen", "-Y", "sign", "-f", str(other), "-n", "gpuverify", str(path)],
        check=True,
        capture_output=True,
        input=b"y\n",
    )
    rc, mismatches, out = check(path, capsys, "--allowed-signers", str(made["allowed"]))
    assert rc == 1 and any(m.startswith(f"{path.name}: the signature does not verify") for m in mismatches), out


def test_an_unsigned_artifact_fails_a_signature_check(made, tmp_path, capsys):
    path = copy_of(made, "pass", tmp_path)
    rc, mismatches, out = check(path, capsys, "--allowed-signers", str(made["allowed"]))
    assert rc == 1 and mismatches == ["signed_by is null: the artifact was not signed"], out


def test_a_signing_row_with_no_key_stops_the_run_before_any_gpu(sandbox):
    text = sandbox.env_path.read_text()
    sandbox.env_path.write_text(
        text + f"\n## Signing\n\n| signer | key |\n|---|---|\n| {SIGNER} | /nonexistent/id_ed25519 |\n"
    )
    proc = sandbox.pytest(GEMM)
    err = proc.stdout.decode() + proc.stderr.decode()
    assert (
        proc.returncode != 0
        and "section 'Signing', row 1" in err
        and "key /nonexistent/id_ed25519 is not a readable file" in err
    ), err
    assert not (sandbox.tickets / "T-1").exists() and sandbox.exec_ids() == []


def test_a_two_gpu_fixture_run_checks_out(sandbox, capsys):
    """`kernel_container.run` on two locked GPUs: a declared command (kind bench), two GPUs in env and trailer.
    The fixture's lock is taken seconds before the run begins (ts) and kept after it: its timeline says so."""
    from kernel_repos import FIXTURE_TEST, commit

    held_first = FIXTURE_TEST.replace(
        "    art = kernel_container.run", "    __import__('time').sleep(2.5)\n    art = kernel_container.run"
    )
    assert held_first != FIXTURE_TEST
    (sandbox.repo / "tests").mkdir()
    (sandbox.repo / "tests" / "test_fixture_use.py").write_text(held_first)
    commit(sandbox.repo, "a test using the fixtures")
    proc = sandbox.pytest("tests/test_fixture_use.py")
    path = sandbox.tickets / "T-1" / "bench_fixture_gemm.json"
    assert path.exists(), proc.stdout.decode()[-2000:]
    art = read_artifact(path)
    assert len(art.gpus) == 2 and art.timeline.lock_released is None
    assert parse_iso_utc(art.timeline.lock_taken) < parse_iso_utc(art.ts) - 2, (art.timeline, art.ts)
    rc, mismatches, out = check(path, capsys)
    assert rc == 0 and not mismatches, out
