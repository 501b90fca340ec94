"""Repeats and ``--gpu-ab BASE`` end to end: the real plugin, a real container, the simulated
ROCm host, and the demo repo's lab-style harness (bench/bench_lab.py) whose speed two commits set."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from kernel_repos import commit, git, lab_config, out

pytestmark = pytest.mark.docker


def gv(*args):
    return subprocess.run([sys.executable, "-m", "pytest_gpuverify.cli.main", *args], capture_output=True, text=True)


def begin_lines(log: bytes) -> list[str]:
    return [
        f"{m.group(2).decode()}{m.group(1).decode()}"
        for m in re.finditer(rb"^\[gpuverify [0-9a-f]{16}\] run (\d) of \d side ([AB]) begins", log, re.M)
    ]


CASES = [  # head's speed over the base's, spread, the call every row must get, compare's exit code
    pytest.param(1.2, 0.01, "IMPROVED", 0, id="20pct-faster"),
    pytest.param(1.03, 0.01, "SAME", 0, id="3pct-faster"),
    pytest.param(1.12, 0.10, "INCONCLUSIVE", 0, id="12pct-cannot-tell"),
    pytest.param(1 / 1.2, 0.01, "REGRESSED", 1, id="20pct-slower"),
]


@pytest.mark.parametrize("speed, spread, expected, rc", CASES)
def test_ab_of_head_and_head_1_then_compare(sandbox, speed, spread, expected, rc):
    # 5 rounds: compare calls from 4 runs a side; 5 is what its error rates were measured with
    lab_config(sandbox.repo, 1.0, spread, message="base", repeats=5)
    base_sha = git(sandbox.repo, "rev-parse", "HEAD")
    lab_config(sandbox.repo, speed, spread, message="candidate", repeats=5)
    head_sha = git(sandbox.repo, "rev-parse", "HEAD")

    # cold: the lab harness counts its invocations per checkout to shape its spread, which a warm-up would shift
    proc = sandbox.pytest("--gpu-target", "lab", "--gpu-ab", "HEAD~1", "--gpu-ab-cache", "cold")
    art = sandbox.artifact("lab")
    assert art.verdict == "PASS", out(proc) + str(art.reasons)
    # both shas, the interleaved order, in the artifact and in the raw log itself
    assert (art.ab.base_ref, art.ab.base_sha, art.ab.head_sha) == ("HEAD~1", base_sha, head_sha)
    assert art.ab.order == [f"{side}{n}" for n in range(1, 6) for side in "AB"]
    log = (sandbox.tickets / "T-1" / art.raw_output).read_bytes()
    assert art.ab.cache_state == "cold" and art.ab.warmups == []
    assert begin_lines(log) == art.ab.order
    assert [r.checkout for r in art.runs] == [base_sha, head_sha] * 5
    # one GPU, one lock, held over every run: the timeline has one hold around all six
    assert len(art.gpus) == 1 and art.gpus[0].lock_path
    assert (
        art.timeline.lock_taken
        <= art.timeline.command_started
        <= art.timeline.command_ended
        <= art.timeline.lock_released
    )
    # each side its own JIT cache (cold: run 1's recorded, each run's its own, removed once it ended)
    assert (
        art.ab.base_cache_dirs["TRITON_CACHE_DIR"] != art.cache_dirs["TRITON_CACHE_DIR"]
    )  # a bench: no aiter JIT folder
    assert art.ab.base_cache_dirs["TRITON_CACHE_DIR"].endswith("-abA1/triton")
    # the base worktree is gone, and git forgot it
    assert not (sandbox.repo / ".gpuverify-ab").exists()
    assert git(sandbox.repo, "worktree", "list").count("\n") == 0
    assert git(sandbox.repo, "status", "--porcelain") == ""
    # every run's rows, tagged; a summary per row and side
    assert {(r.side, r.run) for r in art.perf} == {(s, n) for s in "AB" for n in range(1, 6)}
    assert len(art.perf) == 3 * 2 * 5
    assert {(s.side, s.metric, s.runs) for s in art.perf_summary} == {(s, m, 5) for s in "AB" for m in ("us", "TFLOPS")}

    path = str(sandbox.tickets / "T-1" / "bench_lab.json")
    check = gv("check", path)
    assert check.returncode == 0, check.stdout + check.stderr
    if expected == "IMPROVED":  # check re-derives the new fields: each edit is named
        original = (sandbox.tickets / "T-1" / "bench_lab.json").read_text()
        for edit, said in (
            (("perf_summary", 0, "median"), "perf_summary[0]"),
            (("ab", "base_sha"), "ab says side A"),
            (("runs", 1, "exit_code"), "runs: the artifact records"),
        ):
            data = json.loads(original)
            *parents, leaf = edit
            node = data
            for key in parents:
                node = node[key]
            node[leaf] = 7 if leaf == "exit_code" else 1.0 if leaf == "median" else "0" * 40
            tampered = sandbox.tickets / "T-1" / "bench_tampered.json"
            tampered.write_text(json.dumps(data))
            res = gv("check", str(tampered))
            assert res.returncode == 1 and said in res.stdout, (edit, res.stdout)
            tampered.unlink()
    cmp = gv("compare", "--json", path)
    assert cmp.returncode == rc, cmp.stdout + cmp.stderr
    pairs = json.loads(cmp.stdout)["pairs"]
    assert json.loads(cmp.stdout)["ab"]["base_sha"] == base_sha
    assert len(pairs) == 6 and {p["metric"] for p in pairs} == {"us", "TFLOPS"}  # time and throughput rows
    assert {p["call"] for p in pairs} == {expected}, [(p["shape"], p["metric"], p["call"], p["why"]) for p in pairs]
    assert all(len(p["base"]) == 5 and len(p["head"]) == 5 for p in pairs)
    if expected == "INCONCLUSIVE":  # 12% apart with runs that spread CV 8%: not significant, the interval too wide
        assert all(
            p["why"].startswith("cannot tell: 12.0% apart, past the factor 1.05 but not significant")
            and p["runs_needed"] > 5
            for p in pairs
        ), [p["why"] for p in pairs]
    assert all(p["ci_low"] <= p["ratio"] <= p["ci_high"] for p in pairs)
    table = gv("compare", path)
    assert table.returncode == rc and expected in table.stdout
    assert table.stdout.startswith(f"A (base) = HEAD~1 {base_sha[:12]}, B (head) = {head_sha[:12]}; run order A1 B1 A2")
    print(table.stdout)


def test_repeats_fail_in_run_2_and_short_runs(sandbox):
    """Run 2 of 3 fails its check: FAIL, with every run's output in the one log; then a harness that
    timed fewer steps than min_steps is INCONCLUSIVE."""
    lab_config(sandbox.repo, fail_on_run=2)
    proc = sandbox.pytest("--gpu-target", "lab")
    art = sandbox.artifact("lab")
    assert art.verdict == "FAIL", out(proc)
    assert any(r.startswith("run 2 ") for r in art.reasons), art.reasons
    assert [(s.run, s.side, s.exit_code) for s in art.runs] == [(1, None, 0), (2, None, 0), (3, None, 0)]
    assert sorted({r.run for r in art.perf}) == [1, 2, 3]
    log = (sandbox.tickets / "T-1" / art.raw_output).read_text()
    assert log.count("steps: 50") == 3
    assert len(re.findall(r"^\[gpuverify [0-9a-f]{16}\] run \d of 3 (?:begins|ended): ", log, re.M)) == 6
    path = str(sandbox.tickets / "T-1" / "bench_lab.json")
    assert gv("check", path).returncode == 0

    lab_config(sandbox.repo, steps=20, message="short")
    proc = sandbox.pytest("--gpu-target", "lab", "--gpu-repeats", "2")
    art = sandbox.artifact("lab")
    assert art.verdict == "INCONCLUSIVE", out(proc)
    assert art.target.repeats == 2 and len(art.runs) == 2
    assert any("printed 20 steps" in r and "min_steps 50" in r for r in art.reasons), art.reasons
    assert gv("check", path).returncode == 0


def test_ctrl_c_during_ab_removes_the_base_worktree(sandbox):
    import signal

    (sandbox.repo / "note.txt").write_text("head\n")
    commit(sandbox.repo, "head")
    proc = sandbox.start_sleeper("--gpu-ab", "HEAD~1")  # returns once side A's run prints
    assert (sandbox.repo / ".gpuverify-ab").is_dir() and git(sandbox.repo, "worktree", "list").count("\n") == 1
    proc.send_signal(signal.SIGINT)
    output = proc.communicate(timeout=60)[0].decode(errors="replace")
    assert proc.returncode == 2, output
    art = sandbox.artifact("sleep")
    assert art.verdict == "INCONCLUSIVE" and "interrupted" in art.reasons[0], art.reasons
    # stopped in side A's warm-up (--gpu-ab-cache warm, the default): no measured run, the warm-up recorded
    assert art.runs == [] and art.ab.order == [] and [(w.run, w.side) for w in art.ab.warmups] == [(0, "A")]
    assert not (sandbox.repo / ".gpuverify-ab").exists(), output
    assert git(sandbox.repo, "worktree", "list").count("\n") == 0
    assert any("removed after the run" in n for n in art.notes), art.notes
    assert sandbox.lock_files_free() and sandbox.command_gone()
    assert gv("check", str(sandbox.tickets / "T-1" / "bench_sleep.json")).returncode == 0


def test_repeats_of_an_inner_pytest_keep_each_runs_junit(sandbox):
    from pytest_gpuverify.cli import demo

    demo.install_pytest(sandbox.client, sandbox.container)
    proc = sandbox.pytest("op_tests/triton_tests/test_triton_softmax.py", "--gpu-repeats", "2")
    art = sandbox.artifact("triton_softmax")
    assert art.verdict == "PASS", out(proc) + str(art.reasons)
    assert [(r.run, r.exit_code) for r in art.runs] == [(1, 0), (2, 0)]
    names = [r.junit_xml for r in art.runs]
    assert all(names) and len(set(names)) == 2 and art.junit_xml is None
    assert all((sandbox.tickets / "T-1" / n).exists() for n in names)
    assert art.correctness.passed is True and sorted({r.run for r in art.perf} or {1, 2}) == [1, 2]
    assert gv("check", str(sandbox.tickets / "T-1" / "bench_triton_softmax.json")).returncode == 0


def test_ab_base_without_the_target_never_runs_it(sandbox):
    (sandbox.repo / "bench" / "bench_new.py").write_text('print("[checkAllclose atol=0.01 rtol=0.01 passed~]")\n')
    (sandbox.repo / "gpuverify.toml").write_text(
        '[[targets]]\nname = "new"\nkind = "bench"\npath = "bench/bench_new.py"\n'
    )
    commit(sandbox.repo, "a new harness")
    proc = sandbox.pytest("--gpu-target", "new", "--gpu-ab", "HEAD~1")
    art = sandbox.artifact("new")
    assert art.verdict == "INCONCLUSIVE" and art.run.ran is False, out(proc)
    assert "bench/bench_new.py does not exist at" in art.reasons[0] and "Fix:" in art.reasons[0]
    assert not (sandbox.repo / ".gpuverify-ab").exists()
    before = (sandbox.tickets / "T-1" / "bench_new.json").read_bytes()
    proc = sandbox.pytest("--gpu-target", "new", "--gpu-ab", "no-such-ref")
    # a ref that does not resolve is a usage error before any GPU or container is touched: no new artifact
    assert proc.returncode != 0 and "--gpu-ab no-such-ref: not a commit" in out(proc), out(proc)
    assert (sandbox.tickets / "T-1" / "bench_new.json").read_bytes() == before
