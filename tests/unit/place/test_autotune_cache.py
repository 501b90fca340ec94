"""The autotuner's choices read from a run's Triton cache (place/autotune_cache.py), on real files through the
host's own executor: the least timing's config of each ``*.autotune.json`` written during the run."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from pytest_gpuverify.execute.host import HostExecutor
from pytest_gpuverify.place.autotune_cache import read_cached_choices

# the file Triton's Autotuner.check_disk_cache writes: {"key": [str(k)...], "configs_timings": [(config.__dict__, timings)]}
FAST = {"kwargs": {"BLOCK_M": 128}, "num_warps": 8, "num_ctas": 1, "num_stages": 2, "maxnreg": None, "pre_hook": None}
SLOW = dict(FAST, kwargs={"BLOCK_M": 64}, num_warps=4)


def write(folder: Path, name: str, timings=((SLOW, [0.5, 0.4, 0.6]), (FAST, [0.3, 0.2, 0.4]))) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.autotune.json"
    path.write_text(json.dumps({"key": ["1024", "torch.float16"], "configs_timings": [list(p) for p in timings]}))
    return path


def test_a_file_written_during_the_run_is_its_choice(tmp_path: Path) -> None:
    start = time.time()
    write(tmp_path / "ab12", "_fwd_kernel")
    read = read_cached_choices(HostExecutor(), str(tmp_path), start)
    assert read.problem is None and read.held_before == 0
    [choice] = read.choices
    assert (choice.function, choice.source, choice.file, choice.key) == (
        "_fwd_kernel",
        "cache",
        "ab12/_fwd_kernel.autotune.json",
        "(1024, torch.float16)",
    )
    assert choice.config == {"BLOCK_M": 128, "num_warps": 8, "num_ctas": 1, "num_stages": 2, "maxnreg": None}


def test_a_file_from_before_the_run_is_counted_not_taken(tmp_path: Path) -> None:
    old = write(tmp_path / "cd34", "_bwd_kernel")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    (tmp_path / "cd34" / "broken.autotune.json").write_text("{not json")
    read = read_cached_choices(HostExecutor(), str(tmp_path), time.time())
    assert read.choices == [] and read.held_before == 1 and read.problem is None


def test_no_cache_folder_and_no_python_are_said(tmp_path: Path) -> None:
    read = read_cached_choices(HostExecutor(), str(tmp_path / "never-made"), time.time())
    assert read.choices == [] and read.held_before == 0 and read.problem is None
    assert "no TRITON_CACHE_DIR" in (read_cached_choices(HostExecutor(), None, 0).problem or "")

    class NoPython(HostExecutor):
        def capture(self, argv, env=None, workdir="/", timeout_s=60.0, limit=1 << 20):
            return super().capture(["python3-not-here", *argv[1:]], env, workdir, timeout_s, limit)

    problem = read_cached_choices(NoPython(), str(tmp_path), 0).problem or ""
    assert problem.startswith(f"the read of the Triton cache {tmp_path} exited 127"), problem


def test_a_file_an_earlier_read_took_is_no_later_runs_choice(tmp_path: Path) -> None:
    """A warm cache: the warm-up wrote its choice a moment before the next run started (inside the clocks'
    slack); the next read holds it as older, and a file rewritten since is that run's again."""
    first = time.time()
    path = write(tmp_path / "ab12", "_fwd_kernel")
    known: dict[str, float] = {}
    took = read_cached_choices(HostExecutor(), str(tmp_path), first, known)
    assert [c.function for c in took.choices] == ["_fwd_kernel"]
    assert took.taken == {"ab12/_fwd_kernel.autotune.json": os.stat(path).st_mtime}
    known.update(took.taken)
    again = read_cached_choices(HostExecutor(), str(tmp_path), time.time(), known)
    assert again.choices == [] and again.held_before == 1 and again.taken == {}
    os.utime(path, (time.time() + 0.5, time.time() + 0.5))  # tuned again during the next run
    rewritten = read_cached_choices(HostExecutor(), str(tmp_path), time.time(), known)
    assert [c.function for c in rewritten.choices] == ["_fwd_kernel"] and rewritten.held_before == 0
