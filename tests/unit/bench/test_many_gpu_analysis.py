"""The many-GPU scripts' figures (bench/real_gpu/many_gpu/analysis.py, sampler.py): overlaps seen by
the sampler and in the lock intervals, unlocked use, lost results, waits, and the ideal packing."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[3] / "bench" / "real_gpu" / "many_gpu"
sys.path.insert(0, str(HERE))

import analysis as an  # noqa: E402
import sampler  # noqa: E402


def _art(target: str, gpus: list[int], asked: str, taken: str, released: str, lock_dir: str = "/l") -> dict:
    return {
        "target": {"name": target},
        "gpus": [{"index": g, "lock_path": f"{lock_dir}/gpu-{g}.lock"} for g in gpus],
        "timeline": {"pick_started": asked, "lock_taken": taken, "lock_released": released},
    }


T = "2026-12-03T10:00:{:02d}Z".format


def test_lock_intervals_that_share_a_gpu_are_overlaps_and_back_to_back_ones_are_not():
    arts = {
        "a.json": _art("tp", [0, 1, 2, 3], T(0), T(1), T(10)),
        "b.json": _art("add", [4], T(0), T(1), T(5)),
        "c.json": _art("add", [4], T(2), T(5), T(7)),  # starts as b lets go
        "d.json": _art("softmax", [3], T(0), T(9), T(12)),  # one second inside a's hold of GPU 3
    }
    holds = an.holds_of(arts)
    assert an.lock_overlaps(holds) == [(3, "a.json", "d.json", 1.0)]
    assert an.waits(holds) == [("a.json", 1.0)]  # only the multi-GPU hold
    assert an.makespan(holds) == 11.0


def test_samples_with_two_runs_on_one_gpu_or_a_gpu_used_without_its_lock_are_named():
    samples = [
        {"t": 1.0, "env": {"0": ["r1"], "1": ["r1"]}, "locks": {"0": [11], "1": [11]}},
        {"t": 1.05, "env": {"0": ["r1", "r2"]}, "locks": {"0": [11]}},
        {"t": 1.10, "env": {"2": ["r3"]}, "locks": {}},
    ]
    assert an.sample_overlaps(samples, "env") == [(1.05, 0, ["r1", "r2"])]
    assert an.unlocked_uses(samples, "env") == [(1.10, 2, ["r3"])]
    assert an.sample_overlaps(samples, "nvml") == []  # a source the sampler did not read
    assert an.outside_their_lock(samples, "env", {"r1": {0, 1}, "r2": {1}}) == [(0, "r2")]


def test_lost_counts_each_asked_run():
    arts = {"a": {"target": {"name": "tp"}}, "b": {"target": {"name": "add"}}}
    assert an.lost(["tp", "tp", "add", "softmax"], arts) == ["tp", "softmax"]


def test_the_packing_of_two_tp4_and_eight_one_gpu_jobs_on_eight_and_on_four_gpus():
    jobs = [(4, 10.0), (4, 10.0)] + [(1, 5.0)] * 8
    assert an.lower_bound(jobs, 8) == 15.0 and an.packed_makespan(jobs, 8) == 15.0  # 120 GPU-seconds on 8
    assert an.packed_makespan([(4, 10.0), (1, 12.0), (1, 2.0)], 4) == 22.0  # the 4-GPU job waits for all four
    assert an.lower_bound(jobs, 4) == 30.0 and an.packed_makespan(jobs, 4) == 30.0
    assert an.packed_makespan([(1, 3.0)], 2) == 3.0 and an.packed_makespan([], 4) == 0.0
    with pytest.raises(ValueError, match="needs 4 GPUs, the host has 2"):
        an.packed_makespan(jobs, 2)


def test_an_artifact_whose_gpu_is_not_its_locks_is_named():
    good = _art("add", [2], T(0), T(1), T(2))
    bad = _art("add", [3], T(0), T(1), T(2))
    bad["gpus"][0]["lock_path"] = "/l/gpu-1.lock"
    assert an.gpu_lock_mismatches({"g": good, "b": bad}) == ["b: gpu 3 under lock /l/gpu-1.lock"]
    ratio, goal = an.fanout_goal(30.0, 200.0, 8, 6.0)
    assert ratio == 0.15 and goal == pytest.approx(1.15 / 8 + 0.03)


def test_proc_locks_lines_give_each_gpus_holder():
    text = (
        "1: FLOCK  ADVISORY  WRITE 4242 00:2d:1001 0 EOF\n"
        "1: -> FLOCK  ADVISORY  WRITE 4343 00:2d:1001 0 EOF\n"  # a waiter
        "2: POSIX  ADVISORY  WRITE 99 00:2d:1002 0 EOF\n"
        "3: FLOCK  ADVISORY  WRITE 77 00:2d:1003 0 EOF\n"
    )
    assert sampler.lock_holders(text, {1001: 0, 1003: 5}) == {0: [4242], 5: [77]}
    assert sampler.visible_gpus("GPU-a,3", {"GPU-a": 1}) == [1, 3]


def test_the_sampler_sees_a_marked_process_on_its_gpu_and_the_lock_held(tmp_path):
    """A real sampler process, a real flock and a real marked process: what the scripts rely on."""
    locks = tmp_path / "locks"
    locks.mkdir()
    out, stop = tmp_path / "samples.jsonl", tmp_path / "stop"
    holder = open(locks / "gpu-1.lock", "w")
    fcntl.flock(holder, fcntl.LOCK_EX)
    env = dict(os.environ, GPUVERIFY_RUN_ID="run-x", HIP_VISIBLE_DEVICES="1")
    marked = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env=env)
    samp = subprocess.Popen([sys.executable, str(HERE / "sampler.py"), str(out), str(locks), str(stop)])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if out.exists() and any('"run-x"' in ln for ln in out.read_text().splitlines()[1:]):
                break
            time.sleep(0.05)
    finally:
        stop.touch()
        samp.wait(timeout=20)
        marked.kill()
        marked.wait()
        holder.close()
    header, samples = an.read_samples(out)
    for s in samples:  # this machine's other sessions run marked commands too: only this test's run
        s["env"] = {g: m for g, m in s["env"].items() if m == ["run-x"]}
    assert header["nvml"] is False
    seen = [s for s in samples if s["env"].get("1") == ["run-x"]]
    assert seen and all(s["locks"].get("1") == [os.getpid()] for s in seen)
    assert an.unlocked_uses(samples, "env") == [] and an.sample_overlaps(samples, "env") == []
    json.dumps(samples)  # the lines are plain JSON


def test_fdinfo_names_the_holder_of_each_lock_file(tmp_path):
    with open(tmp_path / "gpu-2.lock", "w") as held, open(tmp_path / "gpu-3.lock", "w"):
        fcntl.flock(held, fcntl.LOCK_EX)
        assert sampler.fdinfo_holders(tmp_path) == {2: [os.getpid()]}  # gpu 3's file is open, not locked
