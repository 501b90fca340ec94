"""``--gpu-ab`` and Triton's autotuner end to end: the real plugin, a real container, the simulated ROCm host,
and a harness that behaves as a Triton kernel tuned with ``cache_results=True`` does: with an empty
``TRITON_CACHE_DIR`` it tunes (printing the choice when ``TRITON_PRINT_AUTOTUNING=1``, as autotuner.py
does) and writes ``<function>.autotune.json``; with it filled it prints no choice. Each commit chooses its
own ``BLOCK``, so the sides tune to different configurations."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from kernel_repos import commit, out

pytestmark = pytest.mark.docker

HARNESS = """\
import json, os, pathlib, sys
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from tune_config import BLOCK
cache = pathlib.Path(os.environ["TRITON_CACHE_DIR"]) / "ab12cd"
cold = not cache.exists()
cache.mkdir(parents=True, exist_ok=True)
if cold:
    if os.environ.get("TRITON_PRINT_AUTOTUNING") == "1":
        print(f"Triton autotuning for function _tune_kernel finished after 0.50s; best config selected: BLOCK: {BLOCK}, "
              "num_warps: 4, num_ctas: 1, num_stages: 2, maxnreg: None;")
    config = {"kwargs": {"BLOCK": BLOCK}, "num_warps": 4, "num_ctas": 1, "num_stages": 2, "maxnreg": None, "pre_hook": None}
    slower = dict(config, num_warps=8)
    (cache / "_tune_kernel.autotune.json").write_text(json.dumps(
        {"key": ["4096", "torch.float16"], "configs_timings": [[slower, [0.2, 0.2, 0.2]], [config, [0.1, 0.1, 0.1]]]}))
    if os.environ.get("TUNE_FIRST_RUN_FAILS"):
        print("[checkAllclose atol=0.01 rtol=0.01 failed!]")
        print("| m | us |")
        print("|--:|---:|")
        print("| 128 | 999.0 |")
        sys.exit(1)
print("[checkAllclose atol=0.01 rtol=0.01 passed~]")
print("cache: " + ("cold" if cold else "warm"))
print("| m | us |")
print("|--:|---:|")
print(f"| 128 | {6400.0 / BLOCK:.3f} |")
"""

DECLARATION = """
[[targets]]
name = "tune"
kind = "bench"
command = "python3 bench/bench_tune.py"
topic = "tune"
repeats = 2
{env}
"""


def tune_commit(repo, block: int, env: str = "") -> None:
    (repo / "bench" / "bench_tune.py").write_text(HARNESS)
    (repo / "bench" / "tune_config.py").write_text(f"BLOCK = {block}\n")
    (repo / "gpuverify.toml").write_text(DECLARATION.format(env=env))
    commit(repo, f"block {block}")


def gv(*args):
    return subprocess.run([sys.executable, "-m", "pytest_gpuverify.cli.main", *args], capture_output=True, text=True)


def begins(log: str) -> list[str]:
    return [
        f"{m.group(2)}{m.group(1)}"
        for m in re.finditer(r"^\[gpuverify [0-9a-f]{16}\] run (\d) of \d side ([AB]) begins", log, re.M)
    ]


def test_warm_sides_each_warm_up_once_and_the_warm_up_is_no_result(sandbox):
    env = '[targets.env]\nTUNE_FIRST_RUN_FAILS = "1"'
    tune_commit(sandbox.repo, 64, env)
    tune_commit(sandbox.repo, 128, env)
    proc = sandbox.pytest("--gpu-target", "tune", "--gpu-ab", "HEAD~1")
    art = sandbox.artifact("tune")
    # the warm-ups printed a failed check, a 999 us row and exited 1: none of it is the run's result
    assert art.verdict == "PASS", out(proc) + str(art.reasons)
    assert art.ab.cache_state == "warm" and art.env["TRITON_PRINT_AUTOTUNING"] == "1"
    assert [(w.run, w.side, w.exit_code) for w in art.ab.warmups] == [(0, "A", 1), (0, "B", 1)]
    assert art.ab.order == ["A1", "B1", "A2", "B2"] and art.exit_code == 0
    assert sorted({(r.run, r.side) for r in art.perf}) == [(1, "A"), (1, "B"), (2, "A"), (2, "B")]
    assert 999.0 not in [r.us_median for r in art.perf]
    assert sum("warm-up run of side" in n for n in art.notes) == 2, art.notes
    log = (sandbox.tickets / "T-1" / art.raw_output).read_text()
    assert begins(log) == ["A0", "B0", "A1", "B1", "A2", "B2"]
    assert log.count("cache: warm") == 4 and "cache: cold" not in log, "every measured run found its side's warm cache"
    # each side's choice, printed by its warm-up; the measured runs reused it without a word
    got = [(c.run, c.side, c.function, c.config["BLOCK"], c.source) for c in art.autotune.choices]
    assert got == [(0, "A", "_tune_kernel", 64, "output"), (0, "B", "_tune_kernel", 128, "output")]
    assert len(art.autotune.differ) == 1 and art.autotune.differ[0].startswith("_tune_kernel: A BLOCK=64")
    assert any(
        n.startswith("autotune: the sides chose different configurations for 1 function(s): _tune_kernel")
        for n in art.notes
    ), art.notes
    path = str(sandbox.tickets / "T-1" / "bench_tune.json")
    assert gv("check", path).returncode == 0, gv("check", path).stdout


@pytest.mark.parametrize("printing", ["1", "0"])
def test_cold_sides_start_every_measured_run_empty(sandbox, printing):
    env = "" if printing == "1" else '[targets.env]\nTRITON_PRINT_AUTOTUNING = "0"'
    tune_commit(sandbox.repo, 64, env)
    tune_commit(sandbox.repo, 128, env)
    proc = sandbox.pytest("--gpu-target", "tune", "--gpu-ab", "HEAD~1", "--gpu-ab-cache", "cold")
    art = sandbox.artifact("tune")
    assert art.verdict == "PASS", out(proc) + str(art.reasons)
    assert art.ab.cache_state == "cold" and art.ab.warmups == []
    log = (sandbox.tickets / "T-1" / art.raw_output).read_text()
    assert begins(log) == ["A1", "B1", "A2", "B2"] and log.count("cache: cold") == 4 and "cache: warm" not in log
    assert art.env["TRITON_PRINT_AUTOTUNING"] == printing
    got = [(c.run, c.side, c.config["BLOCK"], c.config["num_warps"]) for c in art.autotune.choices]
    assert got == [(1, "A", 64, 4), (1, "B", 128, 4), (2, "A", 64, 4), (2, "B", 128, 4)]
    if printing == "1":  # printed: read from the output
        assert {c.source for c in art.autotune.choices} == {"output"}
    else:  # not printed: read from each run's own cache once it ended (the least timing's config)
        assert {(c.source, c.file, c.key) for c in art.autotune.choices} == {
            ("cache", "ab12cd/_tune_kernel.autotune.json", "(4096, torch.float16)")
        }
    assert art.cache_dirs["TRITON_CACHE_DIR"].endswith("-abB1/triton")
    assert art.ab.base_cache_dirs["TRITON_CACHE_DIR"].endswith("-abA1/triton")
    path = str(sandbox.tickets / "T-1" / "bench_tune.json")
    assert gv("check", path).returncode == 0, gv("check", path).stdout
    compared = gv("compare", path)
    assert "the sides chose different configurations" in compared.stdout, compared.stdout + compared.stderr


def test_an_edited_warm_up_record_fails_check(sandbox):
    tune_commit(sandbox.repo, 64)
    (sandbox.repo / "bench" / "tune_config.py").write_text("BLOCK = 64  # the head tunes as the base does\n")
    commit(sandbox.repo, "same block")
    sandbox.pytest("--gpu-target", "tune", "--gpu-ab", "HEAD~1")
    path = sandbox.tickets / "T-1" / "bench_tune.json"
    data = json.loads(path.read_text())
    assert data["autotune"]["differ"] == [] and len(data["ab"]["warmups"]) == 2
    data["ab"]["warmups"] = []
    path.write_text(json.dumps(data))
    res = gv("check", str(path))
    assert res.returncode != 0 and "ab.warmups" in res.stdout + res.stderr
