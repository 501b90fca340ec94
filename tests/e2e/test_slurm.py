"""The Slurm launcher against a real Slurm: munged, slurmctld and two slurmd under hostnames of their own
started for this module (tests/support/slurm_cluster.py), 2 gres GPUs a node over the simulated ROCm host's 4,
and jobs that run the real plugin with a real container. No Hosts row names the nodes: each describes
itself; the env file's Containers row names no host and its `*` GPU lock row serves every node."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import slurm_cluster
from sandboxes import make_sandbox
from slurm_cluster import LONG_TARGET, NODES, SLEEPERS, SLOW_TARGETS, add_targets

pytestmark = pytest.mark.docker


def slurm_section(start_within: float = 120) -> str:
    return (
        "\n## Slurm\n\n| setting | value |\n|---|---|\n"
        f"| partition | {slurm_cluster.PARTITION} |\n| time | 10 |\n| start within | {start_within:g} |\n"
    )


@pytest.fixture(scope="module")
def cluster():
    why = slurm_cluster.missing()
    if why:
        pytest.skip(why)
    # a folder the munge user can reach (pytest's tmp_path is root's 0700 folder)
    root = Path(tempfile.mkdtemp(prefix="gpuverify-slurm-", dir="/tmp"))
    cluster = slurm_cluster.SlurmCluster(root)
    try:
        cluster.start()
    except RuntimeError as exc:
        cluster.stop()
        pytest.fail(f"the test cluster did not start: {exc}")
    yield cluster
    cluster.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def box(tmp_path_factory, docker_client, cluster):
    with make_sandbox(tmp_path_factory.mktemp("slurmbox") / "host", docker_client) as sandbox:
        add_targets(sandbox.repo, seconds=1)
        sandbox.env_path.write_text(cluster_env(sandbox) + slurm_section())
        yield sandbox


def cluster_env(box) -> str:
    """The sandbox's env file for a cluster: its container serves every node (no host named), and a `*`
    GPU lock row serves every machine without a row (the nodes): the login row's facts are not theirs."""
    import socket

    text = box.env_path.read_text()
    here = socket.gethostname()
    row = f"| {box.container} | {box.spec.containers[0][1]} | {here} |"
    assert row in text, text
    text = text.replace(row, f"| {box.container} | {box.spec.containers[0][1]} | not set |")
    lock = next(line for line in text.splitlines() if line.startswith(f"| {here} | builtin |"))
    return text.replace(lock, lock + "\n" + lock.replace(f"| {here} |", "| * |", 1))


@pytest.fixture(autouse=True)
def empty_queue(cluster):
    yield
    deadline = time.monotonic() + 15  # a job that just ended is COMPLETING for a moment
    while (
        left := cluster.run("squeue", "-h", "-t", "PENDING,RUNNING", "-o", "%i").stdout.split()
    ) and time.monotonic() < deadline:
        time.sleep(0.2)
    if left:
        cluster.run("scancel", *left)
        pytest.fail(f"jobs left in the queue: {left}")


def session(box, cluster, ticket: str, *args: str, popen: bool = False, env: dict | None = None):
    # both nodes are this machine: a job on one waits for the GPU lock a job on the other holds
    return box.pytest(
        "--gpu-slurm",
        "--gpu-wait",
        "300",
        *args,
        ticket=ticket,
        popen=popen,
        env={"SLURM_CONF": str(cluster.conf), **(env or {})},
    )


def text_of(proc) -> str:
    return proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


def test_srun_with_gres_sets_the_gpu_variables(cluster):
    res = cluster.run(
        "srun", "--gres=gpu:2", "sh", "-c", "env | grep -E '^(CUDA|ROCR)_VISIBLE_DEVICES=|^SLURM_STEP_GPUS='"
    )
    assert res.returncode == 0, res.stderr
    assert sorted(res.stdout.split()) == ["CUDA_VISIBLE_DEVICES=0,1", "ROCR_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=0,1"]


def test_eight_targets_over_four_gpus_all_pass_and_never_share_a_gpu(box, cluster):
    proc = session(box, cluster, "S-8", *SLOW_TARGETS)
    text = text_of(proc)
    assert proc.returncode == 0, text[-4000:]
    jobs, hosts = set(), set()
    for path in SLOW_TARGETS:
        topic = path.rsplit("/", 1)[1][len("test_") : -3]
        art = box.artifact(topic, ticket="S-8")
        assert art.verdict == "PASS", (topic, art.reasons)
        assert art.scheduler is not None and art.scheduler.kind == "slurm" and art.scheduler.job_id
        assert [g.index for g in art.gpus] == art.scheduler.granted, "the job's own GPU, from its grant"
        grant = next(n for n in art.notes if n.startswith("GPUs granted outside the plugin: slurm job"))
        assert "the cgroup's" in grant, grant  # checked against the job's cgroup, or said why not
        assert f"slurm job {art.scheduler.job_id} COMPLETED: PASS" in text
        jobs.add(art.scheduler.job_id)
        hosts.add(art.host)
    assert len(jobs) == 8, "one job per target"
    assert hosts == set(NODES), "every node ran targets, each under its own hostname with no Hosts row of its own"
    check = subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", "check", str(box.tickets / "S-8")],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "exclusivity: 8 runs on 4 GPU(s) of 2 host(s), 0 overlap(s)" in check.stdout, check.stdout


def wait_for(predicate, what: str, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def running_jobs(cluster) -> list[str]:
    return [
        line.split("|")[0]
        for line in cluster.run("squeue", "-h", "-o", "%i|%T").stdout.split()
        if line.endswith("|RUNNING")
    ]


def sleeping(box, ticket: str, count: int) -> bool:
    logs = list((box.tickets / ticket).glob("bench_sleep_*.log")) if (box.tickets / ticket).exists() else []
    return sum(b"sleeping" in log.read_bytes() for log in logs) >= count


def test_a_job_cancelled_mid_run_is_inconclusive_naming_the_job(box, cluster):
    proc = session(box, cluster, "S-CANCEL", SLEEPERS[0], "--gpu-timeout", "300", popen=True)
    try:
        wait_for(lambda: sleeping(box, "S-CANCEL", 1), "the target's command to start")
        job = wait_for(lambda: running_jobs(cluster), "its job to run")[0]
        assert cluster.run("scancel", job).returncode == 0
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = out.decode(errors="replace")
    assert proc.returncode == 1, text[-3000:]
    assert f"slurm job {job} CANCELLED: INCONCLUSIVE" in text, text[-3000:]
    art = box.artifact("sleep_0", ticket="S-CANCEL")
    assert art.verdict == "INCONCLUSIVE" and art.scheduler is not None and art.scheduler.job_id == job
    assert art.run is not None and art.run.interrupted, "the job's session was stopped, and said so"
    summary = text[text.index("gpuverify =") :]
    assert "INCONCLUSIVE" in summary and f"slurm job {job} CANCELLED" in summary, summary


def test_ctrl_c_cancels_every_job_of_the_session_and_leaves_the_queue_empty(box, cluster):
    proc = session(box, cluster, "S-INT", *SLEEPERS, "--gpu-timeout", "300", popen=True)
    try:
        # four jobs run (the fifth waits for a Slurm GPU); the nodes share the simulated GPUs, so two
        # of the four run their command and two wait for its lock
        wait_for(lambda: sleeping(box, "S-INT", 2) and len(running_jobs(cluster)) == 4, "four jobs to run")
        queued = cluster.run("squeue", "-h", "-o", "%i|%T").stdout.split()
        assert sorted(line.split("|")[1] for line in queued) == ["PENDING"] + ["RUNNING"] * 4, queued
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = out.decode(errors="replace")
    assert cluster.run("squeue", "-h", "-o", "%i").stdout.split() == [], "nothing is left queued or running"
    assert proc.returncode == 2 and "scancel" in text, text[-3000:]
    for path in SLEEPERS:  # every target has its artifact, INCONCLUSIVE
        art = box.artifact(path.rsplit("/", 1)[1][len("test_") : -3], ticket="S-INT")
        assert art.verdict == "INCONCLUSIVE", art.reasons
    pending = [line.split("|")[0] for line in queued if line.endswith("PENDING")][0]
    assert f"slurm job {pending} CANCELLED (PENDING when cancelled by the session's interrupt)" in text, text[-3000:]


def test_a_job_that_never_starts_within_the_bound_is_cancelled_and_inconclusive(box, cluster):
    with_bound = box.env_path.read_text().replace("| start within | 120 |", "| start within | 3 |")
    env_path = box.root / "env-bound.md"
    env_path.write_text(with_bound)
    held = [
        cluster.run(
            "sbatch",
            "--parsable",
            "--gres=gpu:2",
            f"--nodelist={node}",
            "--output=/dev/null",
            f"--chdir={cluster.root}",
            "--wrap",
            "sleep 60",
        ).stdout.strip()
        for node in NODES
    ]  # every GPU taken
    try:
        proc = session(box, cluster, "S-BOUND", SLOW_TARGETS[0], "--gpu-env", str(env_path))
    finally:
        cluster.run("scancel", *held)
    text = text_of(proc)
    assert proc.returncode == 1, text[-3000:]
    art = box.artifact("slow_0", ticket="S-BOUND")
    assert art.verdict == "INCONCLUSIVE" and art.run is not None and not art.run.ran
    assert any("never started within 3 s (PENDING" in r and "cancelled" in r for r in art.reasons), art.reasons
    wait_for(lambda: not cluster.run("squeue", "-h", "-o", "%i").stdout.split(), "the holder job to go")


def test_shard_jobs_run_the_split_each_job_makes(box, cluster):
    proc = session(box, cluster, "S-SHARDS", *SLOW_TARGETS[:4], "--gpu-slurm-shards", "2")
    text = text_of(proc)
    assert proc.returncode == 0, text[-4000:]
    arts = [box.artifact(p.rsplit("/", 1)[1][len("test_") : -3], ticket="S-SHARDS") for p in SLOW_TARGETS[:4]]
    assert all(a.verdict == "PASS" and a.shard is not None and a.scheduler is not None for a in arts)
    by_shard = {}
    for art in arts:
        by_shard.setdefault(art.shard.index, set()).add(art.scheduler.job_id)
        assert art.shard.count == 2 and art.shard.run.startswith("slurm-") and art.shard.sizes == [2, 2]
    assert sorted(by_shard) == [0, 1] and all(len(jobs) == 1 for jobs in by_shard.values()), "one job per shard"
    merged = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_gpuverify.cli.main",
            "merge",
            str(box.tickets / "S-SHARDS"),
            "-o",
            str(box.root / "merged" / "S-SHARDS"),
        ],
        capture_output=True,
        text=True,
    )
    assert merged.returncode == 0 and "2 of 2 arrived, each once and whole" in merged.stdout, merged.stdout


@pytest.mark.parametrize(
    "row, words",
    [
        ("| partiton | gpu |", "setting 'partiton' is not one the Slurm launcher reads"),
        ("| time | soon |", "time 'soon' is not a Slurm time limit"),
        ("| gpus per target | 0 |", "gpus per target '0' is not a whole number from 1 to 64"),
        ("| python | python3 |", "python 'python3' is not an absolute path"),
    ],
)
def test_a_bad_slurm_setting_is_one_line_naming_its_row(tmp_path, row, words):
    from pytest_gpuverify.config.envfile import EnvFileError, parse_env_text

    with pytest.raises(EnvFileError) as err:
        parse_env_text(f"## Slurm\n\n| setting | value |\n|---|---|\n{row}\n", tmp_path / "env.md")
    assert words in str(err.value) and "Slurm" in str(err.value) and "\n" not in str(err.value)


def test_the_slurm_settings_are_read():
    from pytest_gpuverify.config.envfile import parse_env_text

    env = parse_env_text(
        "## Slurm\n| setting | value |\n|---|---|\n| partition | mi300x |\n| account | `kernels` |\n"
        "| time | 1-00:30:00 |\n| GPUs per target | 2 |\n| start within | 90 |\n| python | not set |\n",
        "/tmp/env.md",
    )
    s = env.slurm
    assert (s.partition, s.account, s.time, s.gpus_per_target, s.start_within_s, s.python) == (
        "mi300x",
        "kernels",
        "1-00:30:00",
        2,
        90.0,
        None,
    )


def test_a_job_sbatch_refuses_is_inconclusive_with_its_words(box, cluster):
    env_path = box.root / "env-five.md"
    env_path.write_text(box.env_path.read_text() + "| gpus per target | 5 |\n")  # a node has 2
    proc = session(box, cluster, "S-REFUSED", SLOW_TARGETS[0], "--gpu-env", str(env_path))
    text = text_of(proc)
    assert proc.returncode == 1, text[-3000:]
    art = box.artifact("slow_0", ticket="S-REFUSED")
    assert art.verdict == "INCONCLUSIVE" and art.run is not None and not art.run.ran
    reason = art.reasons[0]
    assert reason.startswith("never submitted to Slurm: sbatch refused the job (") and "Fix:" in reason, reason
    assert "Requested node configuration is not available" in reason, reason


# -- clusters as they are: requeues, time limits, borrowed grants, lost nodes ---------------------


def job_of(cluster, name: str) -> str:
    return wait_for(
        lambda: [
            line.split("|")[0]
            for line in cluster.run("squeue", "-h", "-o", "%i|%j|%T").stdout.split()
            if line.split("|")[1] == f"gpuverify-{name}" and line.endswith("|RUNNING")
        ],
        f"job gpuverify-{name} to run",
    )[0]


def test_a_requeued_job_runs_to_its_end_and_keeps_its_first_output(box, cluster):
    env_path = box.root / "env-requeue.md"  # its start within is shorter than its first run: counted from the requeue
    env_path.write_text(box.env_path.read_text().replace("| start within | 120 |", "| start within | 20 |"))
    proc = session(box, cluster, "S-REQUEUE", LONG_TARGET, "--gpu-env", str(env_path), popen=True)
    try:
        job = job_of(cluster, "long_0")
        wait_for(lambda: any((box.tickets / "S-REQUEUE").glob("bench_long_0*.log")), "the target's command to start")
        time.sleep(8)
        res = cluster.run("scontrol", "requeue", job)
        assert res.returncode == 0, res.stderr
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text[-3000:]
    assert f"slurm job {job} COMPLETED: PASS" in text and "never started" not in text, text[-3000:]
    art = box.artifact("long_0", ticket="S-REQUEUE")
    assert art.verdict == "PASS" and art.scheduler is not None and art.scheduler.job_id == job
    restarts = cluster.run("scontrol", "show", "job", "-o", job).stdout
    assert "Restarts=1" in restarts, restarts
    log = (box.tickets / "S-REQUEUE" / "slurm" / f"long_0.{job}.out").read_text(errors="replace")
    assert log.count("test session starts") == 2, "the first attempt's output survives the requeue"


def test_a_timed_out_shard_keeps_its_finished_targets_pass_in_merge_and_report(box, cluster):
    env_path = box.root / "env-timeout.md"
    env_path.write_text(box.env_path.read_text().replace("| time | 10 |", "| time | 1 |"))
    junit = box.root / "timeout.xml"
    paths = [SLOW_TARGETS[0], SLOW_TARGETS[1], SLEEPERS[0]]  # the shard runs them in this order
    proc = session(
        box,
        cluster,
        "S-TIMEOUT",
        *paths,
        "--gpu-slurm-shards",
        "1",
        "--gpu-env",
        str(env_path),
        "--gpu-timeout",
        "600",
        "--junitxml",
        str(junit),
    )
    text = text_of(proc)
    assert proc.returncode == 1, text[-3000:]
    job = box.artifact("sleep_0", ticket="S-TIMEOUT").scheduler.job_id
    for topic in ("slow_0", "slow_1"):
        assert box.artifact(topic, ticket="S-TIMEOUT").verdict == "PASS"
        line = next(
            line for line in text.splitlines() if f"slurm job {job} TIMEOUT:" in line and f"test_{topic}.py" in line
        )
        assert ": PASS " in line and len(line.split(": PASS ", 1)[1].split()) == 1, (
            f"a PASS line gives no reason: {line}"
        )
    assert (
        f"slurm job {job} TIMEOUT: INCONCLUSIVE" in text
        and box.artifact("sleep_0", ticket="S-TIMEOUT").verdict == "INCONCLUSIVE"
    )
    report = junit.read_text()
    import xml.etree.ElementTree as ET

    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    passed = [name for name, c in cases.items() if not list(c)]
    assert sum("slow" in name for name in passed) == 2, report[-3000:]
    merged = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_gpuverify.cli.main",
            "merge",
            str(box.tickets / "S-TIMEOUT"),
            "-o",
            str(box.root / "merged" / "S-TIMEOUT"),
        ],
        capture_output=True,
        text=True,
    )
    assert "1 of 1 arrived" in merged.stdout, merged.stdout
    from pytest_gpuverify.records.artifact import read_artifact

    for topic, verdict in (("slow_0", "PASS"), ("slow_1", "PASS"), ("sleep_0", "INCONCLUSIVE")):
        assert read_artifact(box.root / "merged" / "S-TIMEOUT" / f"bench_{topic}.json").verdict == verdict


def test_an_inherited_step_grant_naming_another_jobs_gpu_is_refused(box, cluster):
    # sbatch --export=ALL from inside another job's srun step: its SLURM_STEP_GPUS comes along
    proc = session(box, cluster, "S-BORROW", SLOW_TARGETS[0], env={"SLURM_STEP_GPUS": "0,1", "SLURM_STEP_ID": "0"})
    text = text_of(proc)
    assert proc.returncode == 1, text[-3000:]
    art = box.artifact("slow_0", ticket="S-BORROW")
    assert art.verdict == "INCONCLUSIVE" and art.run is not None and not art.run.ran
    reason = next((r for r in art.reasons if "SLURM_STEP_GPUS='0,1' names GPU(s)" in r), None)
    assert reason is not None and "was not granted (SLURM_JOB_GPUS=" in reason and "\n" not in reason, art.reasons


def test_a_node_killed_mid_run_loses_no_finished_result(box, cluster):
    proc = session(box, cluster, "S-NODE", *SLOW_TARGETS, "--gpu-slurm-shards", "2", popen=True)
    node = None
    try:
        jobs = wait_for(
            lambda: (lambda rows: rows if len(rows) == 2 else None)(
                [
                    line.split("|")
                    for line in cluster.run("squeue", "-h", "-o", "%i|%N|%T").stdout.split()
                    if line.endswith("|RUNNING")
                ]
            ),
            "both shard jobs to run",
        )
        node = jobs[0][1]  # the other node takes its jobs when Slurm requeues them
        killed_jobs = [job for job, on, _ in jobs if on == node]
        wait_for(lambda: any((box.tickets / "S-NODE").glob("bench_slow_*.log")), "a target to start")
        cluster.kill_node(node)
        out, _ = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
        if node is not None and f"slurmd-{node}" not in cluster._procs:
            cluster.start_node(node)
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text[-4000:]
    for path in SLOW_TARGETS:  # every target has its result: the lost node's job was requeued and ran out
        art = box.artifact(path.rsplit("/", 1)[1][len("test_") : -3], ticket="S-NODE")
        assert art.verdict == "PASS" and art.run is not None and art.run.ran, (path, art.reasons)
        assert art.host != node or art.scheduler.job_id not in killed_jobs, "the requeued job ran out elsewhere"
    for job in killed_jobs:
        shown = cluster.run("scontrol", "show", "job", "-o", job).stdout
        assert "Restarts=1" in shown, shown
    wait_for(lambda: cluster.node_states().get(node) in ("idle", "mixed", "allocated"), "the node to come back", 90)


def test_a_job_that_fails_without_an_artifact_is_reported_at_once_with_its_cause(box, cluster):
    """The Slurm section's python names a Python without pytest on the node: the job fails before any
    session starts. The controller says so as the job ends (not after the grace a signalled session
    gets to write its artifacts), with the log's one-line cause."""
    python = "/usr/bin/python3"
    if (
        not Path(python).exists()
        or subprocess.run([python, "-c", "import pytest"], capture_output=True).returncode == 0
    ):
        pytest.skip(f"{python} is missing or has pytest")
    env_path = box.root / "env-nopytest.md"
    env_path.write_text(box.env_path.read_text() + f"| python | {python} |\n")
    proc = session(box, cluster, "S-NOPY", SLOW_TARGETS[0], "--gpu-env", str(env_path), popen=True)
    seen: dict[str, float] = {}
    lines = []
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode(errors="replace")
            lines.append(line)
            if " FAILED: INCONCLUSIVE " in line and "slurm job" in line:
                seen.setdefault(line.split("slurm job ", 1)[1].split()[0], time.time())
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = "".join(lines)
    assert proc.returncode == 1 and len(seen) == 1, text[-3000:]
    job, reported = next(iter(seen.items()))
    shown = cluster.run("scontrol", "show", "job", "-o", job).stdout
    ended = time.mktime(time.strptime(shown.split("EndTime=", 1)[1].split()[0], "%Y-%m-%dT%H:%M:%S"))
    from pytest_gpuverify.slurm.launcher import ARTIFACT_GRACE_S

    assert reported - ended < ARTIFACT_GRACE_S / 3, (reported - ended, shown)  # at once, not after the grace
    art = box.artifact("slow_0", ticket="S-NOPY")
    assert art.verdict == "INCONCLUSIVE" and art.run is not None and not art.run.ran
    log = box.tickets / "S-NOPY" / "slurm" / f"slow_0.{job}.out"
    reason = art.reasons[0]
    assert reason.startswith(f"slurm job {job} FAILED") and reason.endswith(
        f"exit code 1: {python}: No module named pytest; its log: {log}"
    ), reason
