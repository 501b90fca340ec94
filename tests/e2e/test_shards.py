"""Splitting GPU targets into shards (--gpu-shard), balancing by durations, and merge naming a shard
that is missing or ran twice. The sessions run on the simulated ROCm host, one sandbox for the module."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys

import pytest
from sandboxes import make_sandbox

from pytest_gpuverify.config.errors import UsageError
from pytest_gpuverify.config.shards import parse_spec, plan_digest, run_id, split
from pytest_gpuverify.records.scheduling import ShardRecord
from pytest_gpuverify.reporting.shard_check import shard_lines

TARGETS = ("op_tests/test_gemm_a8w8.py", "op_tests/test_rmsnorm2d.py", "op_tests/test_moe_2stage.py")


def node_ids(n: int) -> list[str]:
    return [f"op_tests/{sub}/test_{i:03d}.py::t{i}" for i, sub in zip(range(n), ["gemm", "moe", "norm"] * n)]


# -- the split ------------------------------------------------------------------------------------


@pytest.mark.parametrize("count", range(1, 9))
def test_every_target_lands_in_exactly_one_shard_the_same_on_every_machine(count):
    ids = node_ids(23)
    shards = split(ids, count, {})
    shuffled = ids[:]
    random.Random(count).shuffle(shuffled)  # another machine collects them in another order
    again = dict(zip(shuffled, split(shuffled, count, {})))
    assert [again[i] for i in ids] == shards, "the same target set gives the same shards"
    assert all(0 <= s < count for s in shards)
    members = [[i for i, s in zip(ids, shards) if s == k] for k in range(count)]
    assert sorted(i for m in members for i in m) == sorted(ids), "every target in exactly one shard"
    sizes = [len(m) for m in members]
    assert max(sizes) - min(sizes) <= 1, f"equal targets deal out evenly: {sizes}"
    assert plan_digest(ids, count) == plan_digest(shuffled, count) != plan_digest(ids[:-1], count)


def test_durations_balance_the_shards_longest_first():
    ids = node_ids(12)
    seconds = {i: s for i, s in zip(ids, [300, 200, 120, 100, 60, 40, 30, 20, 10, 5, 5, 5])}
    shards = split(ids, 3, seconds)
    totals = [sum(seconds[i] for i, s in zip(ids, shards) if s == k) for k in range(3)]
    assert sorted(totals) == [295, 300, 300], totals  # the greedy fill: within the longest target of even
    unbalanced = split(ids, 3, {})
    plain = [sum(seconds[i] for i, s in zip(ids, unbalanced) if s == k) for k in range(3)]
    assert max(totals) / min(totals) < max(plain) / min(plain)


def test_a_target_without_a_duration_counts_as_the_mean_of_the_known():
    ids = node_ids(4)
    shards = split(ids, 2, {ids[0]: 30.0, ids[1]: 10.0})  # ids 2 and 3 count 20 each: 30 + 10 against 20 + 20
    assert shards == [0, 0, 1, 1], shards


# -- where the shard is read -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, environ, expected",
    [
        ("2/4", {}, (2, 4, "--gpu-shard 2/4")),
        (
            "auto",
            {
                "SLURM_ARRAY_TASK_ID": "5",
                "SLURM_ARRAY_TASK_COUNT": "8",
                "SLURM_ARRAY_TASK_MIN": "0",
                "SLURM_ARRAY_TASK_MAX": "7",
            },
            (5, 8, "SLURM_ARRAY_TASK_ID=5 of 8 (min 0, step 1)"),
        ),
        (
            "auto",
            {
                "SLURM_ARRAY_TASK_ID": "7",
                "SLURM_ARRAY_TASK_COUNT": "4",
                "SLURM_ARRAY_TASK_MIN": "1",
                "SLURM_ARRAY_TASK_MAX": "7",
                "SLURM_ARRAY_TASK_STEP": "2",
            },
            (3, 4, "SLURM_ARRAY_TASK_ID=7 of 4 (min 1, step 2)"),
        ),
        (
            "auto",
            {"BUILDKITE_PARALLEL_JOB": "1", "BUILDKITE_PARALLEL_JOB_COUNT": "3"},
            (1, 3, "BUILDKITE_PARALLEL_JOB=1 of BUILDKITE_PARALLEL_JOB_COUNT=3"),
        ),
        ("auto/6", {"JOB_COMPLETION_INDEX": "4"}, (4, 6, "JOB_COMPLETION_INDEX=4")),
    ],
)
def test_the_shard_is_read_from_the_option_or_the_scheduler(spec, environ, expected):
    assert parse_spec(spec, environ) == expected


@pytest.mark.parametrize(
    "spec, environ, words",
    [
        ("4/4", {}, "shard 4 of 4 (--gpu-shard 4/4) is out of range"),
        ("1of4", {}, "is not I/N, auto or auto/N"),
        ("0/0", {}, "0 shards"),
        ("auto", {}, "no SLURM_ARRAY_TASK_ID, BUILDKITE_PARALLEL_JOB or JOB_COMPLETION_INDEX"),
        ("auto", {"JOB_COMPLETION_INDEX": "1"}, "JOB_COMPLETION_INDEX gives the index, not the count"),
        (
            "auto/4",
            {"BUILDKITE_PARALLEL_JOB": "1", "BUILDKITE_PARALLEL_JOB_COUNT": "3"},
            "the environment says 3 shards",
        ),
        (
            "auto",
            {
                "SLURM_ARRAY_TASK_ID": "3",
                "SLURM_ARRAY_TASK_COUNT": "3",
                "SLURM_ARRAY_TASK_MIN": "1",
                "SLURM_ARRAY_TASK_MAX": "7",
            },
            "are not evenly spaced",
        ),
        ("auto", {"BUILDKITE_PARALLEL_JOB": "x"}, "BUILDKITE_PARALLEL_JOB='x' is not a whole number"),
    ],
)
def test_a_shard_that_cannot_be_read_is_one_usage_line(spec, environ, words):
    with pytest.raises(UsageError) as err:
        parse_spec(spec, environ)
    assert words in str(err.value) and "Fix:" in str(err.value) and "\n" not in str(err.value)


def test_the_run_is_the_option_else_the_ci_run():
    assert run_id("nightly-7", {"GITHUB_RUN_ID": "9"}) == ("nightly-7", "--gpu-shard-run")
    # a re-run attempt is the same run (its attempt is recorded apart: merge lets the latest attempt win)
    assert run_id(None, {"GITHUB_RUN_ID": "9", "GITHUB_RUN_ATTEMPT": "2"}) == ("9", "GITHUB_RUN_ID")
    assert run_id(None, {"SLURM_ARRAY_JOB_ID": "12", "BUILDKITE_BUILD_ID": "b"}) == ("12", "SLURM_ARRAY_JOB_ID")
    assert run_id(None, {}) == (None, None)


# -- did every shard arrive ------------------------------------------------------------------------


def record(index: int, session: str, count: int = 3, plan: str = "p1", sizes=(2, 1, 0)) -> ShardRecord:
    return ShardRecord(
        index=index, count=count, read_from="--gpu-shard", run="r7", plan=plan, sizes=list(sizes), session=session
    )


def test_merge_lines_name_each_shard_missing_twice_or_incomplete(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    whole = [
        (record(0, "s0"), a / "bench_x.json"),
        (record(0, "s0"), a / "bench_y.json"),
        (record(1, "s1"), a / "bench_z.json"),
    ]
    lines, ok = shard_lines(whole)
    assert ok and lines == ["shards of run r7: 3 of 3 arrived, each once and whole"], "shard 2 was given no target"
    lines, ok = shard_lines(whole[:2])
    assert not ok and lines == ["MISSING shard 1/3 of run r7: none of its 1 GPU target(s) has an artifact"]
    lines, ok = shard_lines(whole[1:])
    assert not ok and lines == ["INCOMPLETE shard 0/3 of run r7: 1 of its 2 GPU target(s) have an artifact"]
    lines, ok = shard_lines([*whole, (record(1, "s9"), b / "bench_z.json")])
    assert not ok and lines == [f"TWICE shard 1/3 of run r7: it ran in 2 sessions (session s1: {a}; session s9: {b})"]
    lines, ok = shard_lines([*whole, (record(1, "s9", count=4, plan="p2", sizes=(1, 1, 1, 0)), b / "bench_z.json")])
    assert not ok and lines[0].startswith("SHARDS run r7: split in different ways (3 shards (split p1), 4 shards")


# -- sessions, durations and merge ------------------------------------------------------------------


@pytest.fixture(scope="module")
def box(tmp_path_factory, docker_client):
    with make_sandbox(tmp_path_factory.mktemp("shards") / "host", docker_client) as sandbox:
        yield sandbox


def gpuverify(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_gpuverify.cli.main", *args], capture_output=True, text=True)


def run_shard(box, dest, *args: str) -> str:
    """One shard's session; its ticket folder moved to ``dest/T-1`` (a CI job's upload)."""
    proc = box.pytest(*TARGETS, *args, env={"GITHUB_RUN_ID": "", "SLURM_ARRAY_JOB_ID": "", "BUILDKITE_BUILD_ID": ""})
    text = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    dest.mkdir(parents=True)
    shutil.move(str(box.tickets / "T-1"), dest / "T-1")
    return text


@pytest.mark.docker
def test_shards_run_apart_and_merge_names_the_missing_and_the_twice_run(box):
    root = box.root / "ci"
    first = run_shard(box, root / "s0", "--gpu-shard", "0/2", "--gpu-shard-run", "nightly-1")
    assert "gpuverify: shard 0/2 (--gpu-shard 0/2): 2 of 3 GPU targets" in first and "1 deselected" in first, first
    s0 = sorted(p.name for p in (root / "s0" / "T-1").glob("bench_*.json"))
    run_shard(box, root / "s1", "--gpu-shard", "1/2", "--gpu-shard-run", "nightly-1")
    s1 = sorted(p.name for p in (root / "s1" / "T-1").glob("bench_*.json"))
    assert len(s0) == 2 and len(s1) == 1 and not set(s0) & set(s1), (s0, s1)
    record = json.loads((root / "s1" / "T-1" / s1[0]).read_text())["shard"]
    assert (record["index"], record["count"], record["run"], record["sizes"]) == (1, 2, "nightly-1", [2, 1])
    assert record["read_from"] == "--gpu-shard 1/2" and record["run_from"] == "--gpu-shard-run"

    alone = gpuverify("merge", str(root / "s0" / "T-1"), "-o", str(root / "only0" / "T-1"))
    assert alone.returncode == 1, alone.stdout
    assert "MISSING shard 1/2 of run nightly-1: none of its 1 GPU target(s) has an artifact" in alone.stdout

    both = gpuverify("merge", str(root / "s0" / "T-1"), str(root / "s1" / "T-1"), "-o", str(root / "all" / "T-1"))
    assert both.returncode == 0, both.stdout
    assert "shards of run nightly-1: 2 of 2 arrived, each once and whole" in both.stdout

    run_shard(box, root / "again", "--gpu-shard", "1/2", "--gpu-shard-run", "nightly-1")  # a retried job
    twice = gpuverify(
        "merge", "--keep-all", str(root / "s1" / "T-1"), str(root / "again" / "T-1"), "-o", str(root / "all" / "T-1")
    )
    assert twice.returncode == 1 and "TWICE shard 1/2 of run nightly-1: it ran in 2 sessions" in twice.stdout, (
        twice.stdout
    )

    durations = root / "durations.json"
    made = gpuverify("durations", str(root / "all" / "T-1"), "-o", str(durations))
    assert made.returncode == 0, made.stdout + made.stderr
    seconds = json.loads(durations.read_text())
    assert sorted(seconds) == ["gemm_a8w8", "moe_2stage", "rmsnorm2d"] and all(v > 0 for v in seconds.values())
    # a long target alone on a shard: the other two share the other one
    durations.write_text(json.dumps({"gemm_a8w8": 100.0, "moe_2stage": 1.0, "rmsnorm2d": 1.0}))
    text = run_shard(box, root / "balanced", "--gpu-shard", "0/2", "--gpu-durations", str(durations))
    assert f"shard 0/2 (--gpu-shard 0/2): 1 of 3 GPU targets, balanced by {durations}" in text, text
    assert [p.name for p in (root / "balanced" / "T-1").glob("bench_*.json")] == ["bench_gemm_a8w8.json"]


@pytest.mark.docker
def test_bad_shard_options_stop_the_run_before_any_gpu(box):
    proc = box.pytest(*TARGETS, "--gpu-shard", "3/3")
    text = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 4 and "shard 3 of 3 (--gpu-shard 3/3) is out of range" in text, text
    proc = box.pytest(*TARGETS, "--gpu-durations", "/nonexistent.json")
    text = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 4 and "pass --gpu-shard I/N (or auto) with them" in text, text
    bad = box.root / "bad-durations.json"
    bad.write_text("[1, 2]")
    proc = box.pytest(*TARGETS, "--gpu-shard", "0/2", "--gpu-durations", str(bad))
    text = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 4 and "not an object of topic -> seconds" in text and "gpuverify durations" in text, text
    assert not (box.tickets / "T-1").exists() or not list((box.tickets / "T-1").glob("bench_*.json"))


@pytest.mark.docker
def test_a_durations_file_not_made_yet_is_a_warning_and_every_target_counts_the_same(box):
    """A recipe names its durations file before any run wrote it: the shards run, split evenly."""
    missing = box.root / "missing.json"
    proc = box.pytest(*TARGETS, "--gpu-shard", "0/2", "--gpu-durations", str(missing), ticket="T-NODUR")
    text = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 0, text[-3000:]
    assert f"gpuverify: --gpu-durations {missing}: no such file yet, so every target counts the same" in text, text
    assert f"gpuverify durations TICKET_DIR... -o {missing}" in text, text
    arts = sorted((box.tickets / "T-NODUR").glob("bench_*.json"))
    assert len(arts) == 2 and all(json.loads(p.read_text())["shard"]["durations"] is None for p in arts)


@pytest.mark.docker
def test_a_path_valued_option_does_not_change_the_plan_digest(box):
    """A value given after a space (a file outside the checkout) moves pytest's rootdir, and with it
    the node ids; the split and its digest are made from checkout-relative names and do not move."""
    outside = box.root / "elsewhere"
    outside.mkdir(exist_ok=True)
    durations = outside / "durations.json"
    durations.write_text(json.dumps({"gemm_a8w8": 1.0, "moe_2stage": 1.0, "rmsnorm2d": 1.0}))
    plain = box.pytest(*TARGETS, "--gpu-shard", "0/2", f"--gpu-durations={durations}", ticket="T-PLAIN")
    moved = box.pytest(*TARGETS, "--gpu-shard", "0/2", "--gpu-durations", str(durations), ticket="T-MOVED")
    for proc in (plain, moved):
        assert proc.returncode == 0, (proc.stdout + proc.stderr).decode(errors="replace")[-3000:]
    assert b"rootdir: " + str(box.root).encode() in moved.stdout, moved.stdout[-2000:]  # the rootdir moved
    digests = {
        t: {json.loads(p.read_text())["shard"]["plan"] for p in (box.tickets / t).glob("bench_*.json")}
        for t in ("T-PLAIN", "T-MOVED")
    }
    assert digests["T-PLAIN"] == digests["T-MOVED"] and len(digests["T-PLAIN"]) == 1, digests
    names = {t: sorted(p.name for p in (box.tickets / t).glob("bench_*.json")) for t in ("T-PLAIN", "T-MOVED")}
    assert names["T-PLAIN"] == names["T-MOVED"], names


@pytest.mark.docker
def test_xdist_workers_make_the_same_split_and_share_one_session_id(box):
    proc = box.pytest(*TARGETS, "-n", "2", "--gpu-shard", "0/2", ticket="T-XDIST")
    text = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, text[-3000:]
    arts = sorted((box.tickets / "T-XDIST").glob("bench_*.json"))
    assert [p.name for p in arts] == ["bench_gemm_a8w8.json", "bench_rmsnorm2d.json"], (arts, text[-3000:])
    records = [json.loads(p.read_text())["shard"] for p in arts]
    assert all((r["index"], r["count"], r["sizes"]) == (0, 2, [2, 1]) for r in records)
    assert records[0]["session"] == records[1]["session"], "one session, whichever worker ran the target"


@pytest.mark.docker
def test_an_empty_shard_exits_0_with_one_line_and_merge_counts_it_arrived(box):
    """Three targets over four shards: shard 3/4 has none. It is not pytest's "no tests collected"
    (exit 5, a failed CI job or array task); merge counts it arrived from the others' plan."""
    env = {"GITHUB_RUN_ID": "", "SLURM_ARRAY_JOB_ID": "", "BUILDKITE_BUILD_ID": ""}
    empty = box.pytest(*TARGETS, "--gpu-shard", "3/4", "--gpu-shard-run", "sparse-1", ticket="T-SPARSE", env=env)
    text = empty.stdout.decode(errors="replace") + empty.stderr.decode(errors="replace")
    assert empty.returncode == 0, text[-3000:]
    lines = [line for line in text.splitlines() if "shard 3/4" in line]
    assert lines == ["gpuverify: shard 3/4 has no targets: 3 targets over 4 shards (--gpu-shard 3/4)"], text[-3000:]
    assert not list(box.tickets.glob("T-SPARSE/bench_*.json")), "no target ran"
    for index in range(3):
        proc = box.pytest(
            *TARGETS, "--gpu-shard", f"{index}/4", "--gpu-shard-run", "sparse-1", ticket="T-SPARSE", env=env
        )
        assert proc.returncode in (0, 1), (proc.stdout + proc.stderr).decode(errors="replace")[-3000:]  # 1: a FAIL
    merged = gpuverify("merge", str(box.tickets / "T-SPARSE"), "-o", str(box.root / "merged" / "T-SPARSE"))
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "shards of run sparse-1: 4 of 4 arrived, each once and whole" in merged.stdout, merged.stdout

    bare = box.repo / "op_tests" / "nothing_here"
    bare.mkdir(exist_ok=True)
    nothing = box.pytest(str(bare), "--gpu-shard", "1/4", ticket="T-NONE", env=env)
    assert nothing.returncode == 5, "no target in the session at all stays pytest's 'no tests collected'"


@pytest.mark.docker
def test_a_one_task_array_rerun_runs_its_shard_with_the_count_or_is_refused(box):
    """sbatch --array=2, a re-run of task 2 of four: plain auto does not know the count (it ran every
    target as shard 0/1); auto/4 runs shard 2/4 only."""
    env = {
        "SLURM_ARRAY_JOB_ID": "77",
        "SLURM_ARRAY_TASK_ID": "2",
        "SLURM_ARRAY_TASK_COUNT": "1",
        "SLURM_ARRAY_TASK_MIN": "2",
        "SLURM_ARRAY_TASK_MAX": "2",
        "GITHUB_RUN_ID": "",
        "BUILDKITE_BUILD_ID": "",
    }
    plain = box.pytest(*TARGETS, "--gpu-shard", "auto", ticket="T-ONE", env=env)
    text = (plain.stdout + plain.stderr).decode(errors="replace")
    assert plain.returncode == 4, text[-3000:]
    assert "this array has one task (SLURM_ARRAY_TASK_ID=2, SLURM_ARRAY_TASK_COUNT=1)" in text, text[-3000:]
    assert "--gpu-shard auto/N" in text and "--gpu-shard 2/N" in text, text[-3000:]
    assert not list(box.tickets.glob("T-ONE/bench_*.json")), "nothing ran"
    counted = box.pytest(*TARGETS, "--gpu-shard", "auto/4", ticket="T-ONE", env=env)
    text = (counted.stdout + counted.stderr).decode(errors="replace")
    assert counted.returncode in (0, 1), text[-3000:]  # 1: a target's FAIL verdict
    assert "gpuverify: shard 2/4 (SLURM_ARRAY_TASK_ID=2 of a one-task array, a re-run: 4 shards from auto/4)" in text
    arts = [json.loads(p.read_text())["shard"] for p in box.tickets.glob("T-ONE/bench_*.json")]
    assert len(arts) == 1 and (arts[0]["index"], arts[0]["count"], arts[0]["run"]) == (2, 4, "77"), arts
