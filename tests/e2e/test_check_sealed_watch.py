"""The watch sealed in the raw log's trailer, end to end on the simulated host (the amdsmi library at
ROCM_PATH, so clocks and clock events are read): an unsigned edit of the foreign processes, the clock
events or the SM clocks fails `gpuverify check` naming the field; a log sealed before the watch was says
so and checks as before. And compare: runs at the power cap on both sides are called, a thermal slowdown
on one side is not.

The artifacts are the engine's own, made once per module: PC-1 and PC-2 a deterministic bench at its
power cap (PPT0 set throughout), five runs each; HOT the same with the hotspot's temperature limit too;
SHARED a slow op_test during which another user's process starts on every GPU with a thermal limit.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
from check_edits import check, copy_of, edit, raw_of, reseal

from pytest_gpuverify.cli.check import UNSEALED_WATCH
from pytest_gpuverify.cli.main import main
from pytest_gpuverify.records.artifact import read_artifact
from pytest_gpuverify.simulator import load_state, save_state

pytestmark = pytest.mark.docker

PPT0, HOTSPOT = 1 << 0, 1 << 36  # the driver's ASIC-independent throttler bits: a power limit, a temperature limit
BENCH = "softmax-perf-report"
DECLARED = f'''[[targets]]
name = "{BENCH}"
kind = "bench"
command = "python3 bench/bench_softmax.py"
directions = {{ "Triton" = "higher", "Torch (native)" = "higher" }}
'''
SLOW_TEST = """# A passing op_test that keeps its GPU for a few seconds.
import time

import aiter

aiter.report_environment()
print("gemm starting", flush=True)
time.sleep(4)
aiter.check_line("ck: ", "passed~")
print("| dtype | m | ck us |\\n|:--|--:|--:|\\n| torch.bfloat16 | 1 | 9.29366 |")
"""


def events_on_every_gpu(sandbox, bits: int, foreign_pid=None) -> None:
    state = load_state(sandbox.state_path)
    for i, gpu in enumerate(state.gpus):
        gpu.throttle_status = bits
        if foreign_pid is not None:
            state.set_busy(i, pid=foreign_pid, name="sleep", vram_bytes=60 << 30)
    save_state(state, sandbox.state_path)


@pytest.fixture(scope="module")
def made(tmp_path_factory, docker_client) -> dict[str, Path]:
    from kernel_repos import commit
    from sandboxes import make_sandbox

    root = tmp_path_factory.mktemp("sealed")
    with make_sandbox(root / "host", docker_client) as box:
        library = {"ROCM_PATH": str(box.sim_bin)}  # clocks and their events come from the amdsmi library only
        (box.repo / "gpuverify.toml").write_text(DECLARED)
        (box.repo / "op_tests" / "test_gemm_slow.py").write_text(SLOW_TEST)
        commit(box.repo, "a declared bench, a slow op_test")
        events_on_every_gpu(box, PPT0)
        for ticket in ("PC-1", "PC-2"):
            box.pytest("--gpu-target", BENCH, "--gpu-repeats", "5", ticket=ticket, env=library)
        events_on_every_gpu(box, PPT0 | HOTSPOT)
        box.pytest("--gpu-target", BENCH, "--gpu-repeats", "5", ticket="HOT", env=library)
        events_on_every_gpu(box, 0)
        foreign = subprocess.Popen(["sleep", "60"])
        logs = box.tickets / "SHARED"

        def share_mid_run():
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not (logs.exists() and list(logs.glob("bench_gemm_slow.*.log"))):
                time.sleep(0.1)
            time.sleep(1.0)
            events_on_every_gpu(box, PPT0 | HOTSPOT, foreign_pid=foreign.pid)

        sharer = threading.Thread(target=share_mid_run, daemon=True)
        sharer.start()
        try:
            box.pytest("op_tests/test_gemm_slow.py", ticket="SHARED", env=library)
            sharer.join(5)
        finally:
            foreign.kill()
            foreign.wait()
        paths = {
            "cap 1": box.tickets / "PC-1" / f"bench_{BENCH}.json",
            "cap 2": box.tickets / "PC-2" / f"bench_{BENCH}.json",
            "hot": box.tickets / "HOT" / f"bench_{BENCH}.json",
            "shared": logs / "bench_gemm_slow.json",
            "foreign pid": foreign.pid,
        }
        for case in ("cap 1", "cap 2", "hot", "shared"):
            assert paths[case].exists(), box.artifact(
                paths[case].stem.removeprefix("bench_"), ticket=paths[case].parent.name
            )
        yield paths


def test_the_watch_records_both_classes_and_the_trailer_seals_them(made, tmp_path, capsys):
    cap = read_artifact(made["cap 1"])
    assert cap.verdict == "PASS" and len(cap.watch) == 5, cap.reasons
    for w in cap.watch:
        [gpu] = w.clocks
        assert (gpu.unlike_events, gpu.normal_events, gpu.throttled) == ([], ["ppt0"], False), w
    shared = read_artifact(made["shared"])
    assert shared.verdict == "INCONCLUSIVE" and shared.run.shared, shared.reasons
    [w] = shared.watch
    assert [p.pid for p in w.foreign] == [made["foreign pid"]]
    assert w.clocks[0].unlike_events == ["temp_hotspot"] and w.clocks[0].throttled
    sealed = json.loads(raw_of(made["shared"]).read_bytes().splitlines()[-1].split(b": ", 1)[1])["watch"]
    assert [p["pid"] for p in sealed[0]["foreign"]] == [made["foreign pid"]]
    assert sealed[0]["clocks"][0]["unlike_events"] == ["temp_hotspot"]
    for case in ("cap 1", "hot", "shared"):
        rc, mismatches, out = check(copy_of(made, case, tmp_path), capsys)
        assert rc == 0 and not mismatches and UNSEALED_WATCH not in out, out


def drop_hotspot(d: dict) -> None:
    gpu = d["watch"][0]["clocks"][0]
    for key in ("unlike_events", "throttle_seen"):
        gpu[key] = [e for e in gpu[key] if e != "temp_hotspot"]
    for edge in ("start", "end"):
        gpu[edge]["throttle"] = [e for e in gpu[edge]["throttle"] if e != "temp_hotspot"]
    gpu["throttled"] = False


def cleared(d: dict) -> None:
    """The foreign process gone, the shared reasons with it, and a PASS (whose reasons are only unknowns)."""
    d["watch"][0]["foreign"] = []
    d.update(verdict="PASS", reasons=[r for r in d["reasons"] if r not in d["run"]["shared"]])
    d["run"]["shared"] = []


SAID = "the raw output's trailer says"
# (case, edit of the artifact, the line check must print)
EDITS = {
    "foreign removed": (
        "shared",
        lambda d: d["watch"][0].update(foreign=[]),
        f"watch[0].foreign has 0 entries (none), {SAID} 1 (pid {{pid}} on gpu {{gpu}})",
    ),
    "foreign removed, run.shared emptied, verdict PASS": (
        "shared",
        cleared,
        f"watch[0].foreign has 0 entries (none), {SAID} 1 (pid {{pid}} on gpu {{gpu}})",
    ),
    "a throttle event removed": (
        "shared",
        drop_hotspot,
        f"watch[0].clocks[0].unlike_events is [], {SAID} ['temp_hotspot']",
    ),
    "a thermal run's event removed": (
        "hot",
        lambda d: [drop_hotspot({"watch": [w]}) for w in d["watch"]],
        f"watch[0].clocks[0].unlike_events is [], {SAID} ['temp_hotspot']",
    ),
    "sm clock max edited": (
        "cap 1",
        lambda d: d["watch"][2]["clocks"][0].update(sm_mhz_max=2500.0),
        f"watch[2].clocks[0].sm_mhz_max is 2500.0, {SAID} ",
    ),
    "end reading edited": (
        "cap 1",
        lambda d: d["watch"][0]["clocks"][0]["end"].update(sm_mhz=2500.0),
        "watch[0].clocks[0].end.sm_mhz is 2500.0, ",
    ),
}


@pytest.mark.parametrize("name", list(EDITS))
def test_an_unsigned_edit_of_the_watch_fails_check_naming_the_field(made, name, tmp_path, capsys):
    case, change, expected = EDITS[name]
    path = copy_of(made, case, tmp_path)
    gpu = read_artifact(path).gpu.index
    edit(path, change)
    rc, mismatches, out = check(path, capsys)
    expected = expected.format(pid=made["foreign pid"], gpu=gpu)
    assert rc == 1 and any(m.startswith(expected) for m in mismatches), (expected, out)
    if name == "foreign removed, run.shared emptied, verdict PASS":  # before the seal, nothing else told
        assert all(m.startswith("watch[0].") for m in mismatches), out


def test_a_log_sealed_before_the_watch_says_so_and_checks_as_before(made, tmp_path, capsys):
    path = copy_of(made, "shared", tmp_path)
    raw = raw_of(path)
    lines = raw.read_bytes().splitlines(keepends=True)
    prefix, data = lines[-1].split(b": ", 1)
    fields = json.loads(data)
    fields.pop("watch")
    raw.write_bytes(b"".join(lines[:-1]) + prefix + b": " + json.dumps(fields).encode() + b"\n")
    reseal(path)
    rc, mismatches, out = check(path, capsys)
    assert rc == 0 and not mismatches and f"{path}: {UNSEALED_WATCH}" in out, out
    edit(path, lambda d: d["watch"][0]["clocks"][0].update(sm_mhz_max=2500.0))  # what only the seal could tell
    assert check(path, capsys)[0] == 0


def compared(base: Path, head: Path, capsys) -> tuple[int, dict]:
    rc = main(["compare", "--json", str(base), str(head)])
    return rc, json.loads(capsys.readouterr().out)


def test_runs_at_the_power_cap_are_called_a_thermal_side_is_not(made, capsys):
    rc, result = compared(made["cap 1"], made["cap 2"], capsys)
    assert result["pairs"] and all(p["call"] == "SAME" for p in result["pairs"]), result
    assert (
        "the base reached its power cap in 5 of 5 runs (ppt0): the normal state of a GPU under load, not a veto"
        in result["notes"]
    ), result["notes"]
    rc, result = compared(made["cap 1"], made["hot"], capsys)
    assert all(
        p["call"] == "INCONCLUSIVE"
        and p["why"].startswith("the head was throttled in run 1 (GPU ")
        and "temp_hotspot" in p["why"]
        for p in result["pairs"]
    ), result
