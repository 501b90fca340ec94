"""The Slurm launcher against a real Slurm: munged, slurmctld and slurmd started for this module
(tests/slurm_cluster.py), one node with 4 gres GPUs over the simulated ROCm host's 4, and jobs that
run the real plugin with a real container."""

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
from slurm_cluster import SLEEPERS, SLOW_TARGETS, add_targets
from conftest import make_sandbox

pytestmark = pytest.mark.docker
def slurm_section(start_within: float = 120) -> str:
    return ("\n## Slurm\n\n| setting | value |\n|---|---|\n"
            f"| partition | {slurm_cluster.PARTITION} |\n| time | 10 |\n| start within | {start_within:g} |\n")


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
        sandbox.env_path.write_text(sandbox.env_path.read_text() + slurm_section())
        yield sandbox


@pytest.fixture(autouse=True)
def empty_queue(cluster):
    yield
    deadline = time.monotonic() + 15  # a job that just ended is COMPLETING for a moment
    while (left := cluster.run("squeue", "-h", "-t", "PENDING,RUNNING", "-o", "%i").stdout.split()) and \
            time.monotonic() < deadline:
        time.sleep(0.2)
    if left:
        cluster.run("scancel", *left)
        pytest.fail(f"jobs left in the queue: {left}")


def session(box, cluster, ticket: str, *args: str, popen: bool = False):
    return box.pytest("--gpu-slurm", *args, ticket=ticket, env={"SLURM_CONF": str(cluster.conf)}, popen=popen)


def text_of(proc) -> str:
    return proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


def test_srun_with_gres_sets_the_gpu_variables(cluster):
    res = cluster.run("srun", "--gres=gpu:2", "sh", "-c", "env | grep -E '^(CUDA|ROCR)_VISIBLE_DEVICES=|^SLURM_STEP_GPUS='")
    assert res.returncode == 0, res.stderr
    assert sorted(res.stdout.split()) == ["CUDA_VISIBLE_DEVICES=0,1", "ROCR_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=0,1"]


def test_eight_targets_over_four_gpus_all_pass_and_never_share_a_gpu(box, cluster):
    proc = session(box, cluster, "S-8", *SLOW_TARGETS)
    text = text_of(proc)
    assert proc.returncode == 0, text[-4000:]
    jobs = set()
    for path in SLOW_TARGETS:
        topic = path.rsplit("/", 1)[1][len("test_"):-3]
        art = box.artifact(topic, ticket="S-8")
        assert art.verdict == "PASS", (topic, art.reasons)
        assert art.scheduler is not None and art.scheduler.kind == "slurm" and art.scheduler.job_id
        assert [g.index for g in art.gpus] == art.scheduler.granted, "the job's own GPU, from its grant"
        assert f"slurm job {art.scheduler.job_id} COMPLETED: PASS" in text
        jobs.add(art.scheduler.job_id)
    assert len(jobs) == 8, "one job per target"
    check = subprocess.run([sys.executable, "-m", "pytest_gpuverify.cli.main", "check", str(box.tickets / "S-8")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "exclusivity: 8 runs on 4 GPU(s) of 1 host(s), 0 overlap(s)" in check.stdout, check.stdout


def wait_for(predicate, what: str, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def running_jobs(cluster) -> list[str]:
    return [line.split("|")[0] for line in cluster.run("squeue", "-h", "-o", "%i|%T").stdout.split()
            if line.endswith("|RUNNING")]


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
    summary = text[text.index("gpuverify ="):]
    assert "INCONCLUSIVE" in summary and f"slurm job {job} CANCELLED" in summary, summary


def test_ctrl_c_cancels_every_job_of_the_session_and_leaves_the_queue_empty(box, cluster):
    proc = session(box, cluster, "S-INT", *SLEEPERS, "--gpu-timeout", "300", popen=True)
    try:
        wait_for(lambda: sleeping(box, "S-INT", 4), "four targets to run (the fifth waits for a GPU)")
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
        art = box.artifact(path.rsplit("/", 1)[1][len("test_"):-3], ticket="S-INT")
        assert art.verdict == "INCONCLUSIVE", art.reasons
    pending = [line.split("|")[0] for line in queued if line.endswith("PENDING")][0]
    assert f"slurm job {pending} CANCELLED (PENDING when cancelled by the session's interrupt)" in text, text[-3000:]


def test_a_job_that_never_starts_within_the_bound_is_cancelled_and_inconclusive(box, cluster):
    with_bound = box.env_path.read_text().replace("| start within | 120 |", "| start within | 3 |")
    env_path = box.root / "env-bound.md"
    env_path.write_text(with_bound)
    holder = cluster.run("sbatch", "--parsable", "--gres=gpu:4", "--output=/dev/null", f"--chdir={cluster.root}",
                         "--wrap", "sleep 60")  # every GPU taken
    held = holder.stdout.strip()
    try:
        proc = session(box, cluster, "S-BOUND", SLOW_TARGETS[0], "--gpu-env", str(env_path))
    finally:
        cluster.run("scancel", held)
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
    arts = [box.artifact(p.rsplit("/", 1)[1][len("test_"):-3], ticket="S-SHARDS") for p in SLOW_TARGETS[:4]]
    assert all(a.verdict == "PASS" and a.shard is not None and a.scheduler is not None for a in arts)
    by_shard = {}
    for art in arts:
        by_shard.setdefault(art.shard.index, set()).add(art.scheduler.job_id)
        assert art.shard.count == 2 and art.shard.run.startswith("slurm-") and art.shard.sizes == [2, 2]
    assert sorted(by_shard) == [0, 1] and all(len(jobs) == 1 for jobs in by_shard.values()), "one job per shard"
    merged = subprocess.run([sys.executable, "-m", "pytest_gpuverify.cli.main", "merge", str(box.tickets / "S-SHARDS"),
                             "-o", str(box.root / "merged" / "S-SHARDS")], capture_output=True, text=True)
    assert merged.returncode == 0 and "2 of 2 arrived, each once and whole" in merged.stdout, merged.stdout


@pytest.mark.parametrize("row, words", [
    ("| partiton | gpu |", "setting 'partiton' is not one the Slurm launcher reads"),
    ("| time | soon |", "time 'soon' is not a Slurm time limit"),
    ("| gpus per target | 0 |", "gpus per target '0' is not a whole number from 1 to 64"),
    ("| python | python3 |", "python 'python3' is not an absolute path"),
])
def test_a_bad_slurm_setting_is_one_line_naming_its_row(tmp_path, row, words):
    from pytest_gpuverify.config.envfile import EnvFileError, parse_env_text

    with pytest.raises(EnvFileError) as err:
        parse_env_text(f"## Slurm\n\n| setting | value |\n|---|---|\n{row}\n", tmp_path / "env.md")
    assert words in str(err.value) and "Slurm" in str(err.value) and "\n" not in str(err.value)


def test_the_slurm_settings_are_read():
    from pytest_gpuverify.config.envfile import parse_env_text

    env = parse_env_text("## Slurm\n| setting | value |\n|---|---|\n| partition | mi300x |\n| account | `kernels` |\n"
                         "| time | 1-00:30:00 |\n| GPUs per target | 2 |\n| start within | 90 |\n| python | not set |\n",
                         "/tmp/env.md")
    s = env.slurm
    assert (s.partition, s.account, s.time, s.gpus_per_target, s.start_within_s, s.python) == \
        ("mi300x", "kernels", "1-00:30:00", 2, 90.0, None)


def test_a_job_sbatch_refuses_is_inconclusive_with_its_words(box, cluster):
    env_path = box.root / "env-five.md"
    env_path.write_text(box.env_path.read_text() + "| gpus per target | 5 |\n")  # the node has 4
    proc = session(box, cluster, "S-REFUSED", SLOW_TARGETS[0], "--gpu-env", str(env_path))
    text = text_of(proc)
    assert proc.returncode == 1, text[-3000:]
    art = box.artifact("slow_0", ticket="S-REFUSED")
    assert art.verdict == "INCONCLUSIVE" and art.run is not None and not art.run.ran
    reason = art.reasons[0]
    assert reason.startswith("never submitted to Slurm: sbatch refused the job (") and "Fix:" in reason, reason
    assert "Requested node configuration is not available" in reason, reason
