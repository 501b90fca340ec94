"""Exclusivity from artifacts alone: timelines, overlap detection, `gpuverify check` over folders."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from exclusivity_cases import art, overlaps

from pytest_gpuverify.common.clock import SessionClock, iso_utc, parse_iso_utc
from pytest_gpuverify.records.artifact import Artifact, Timeline
from pytest_gpuverify.verify.exclusivity import artifact_paths, holds_of

ROOT = Path(__file__).resolve().parents[2]


def test_the_session_clock_is_ordered_and_round_trips():
    clock = SessionClock()
    times = [clock.wall(clock.mono0 + k * 1e-6) for k in range(5)]
    assert times == sorted(times) and len(set(times)) == 5
    assert abs(parse_iso_utc(clock.wall(clock.mono0)) - clock.wall0) < 1e-5
    assert clock.wall(None) is None


def test_overlap_only_on_one_gpu_of_one_host():
    t = 1_800_000_000.0
    a = art("h1", [0], t, t + 10)
    assert overlaps(a, art("h1", [0], t + 10, t + 20)) == [], "touching is a handoff, not an overlap"
    assert overlaps(a, art("h1", [1], t + 5, t + 15)) == [], "another GPU"
    assert overlaps(a, art("h2", [0], t + 5, t + 15)) == [], "another host"
    (o,) = overlaps(a, art("h1", [0], t + 9.5, t + 20))
    assert o.first.path.name == "bench_0.json" and o.second.path.name == "bench_1.json"
    assert abs(o.seconds - 0.5) < 1e-6 and "host h1 gpu 0" in o.describe() and "bench_1.json" in o.describe()
    # a two-GPU run overlapping two runs, one on each of its GPUs; a run inside another counts too
    found = overlaps(art("h1", [0, 1], t, t + 10), art("h1", [1], t + 2, t + 3), art("h1", [0], t + 9, t + 11))
    assert sorted((o.first.gpu, o.second.path.name) for o in found) == [(0, "bench_2.json"), (1, "bench_1.json")]


def test_artifacts_without_a_usable_timeline_are_said_apart():
    t = 1_800_000_000.0
    old = Artifact(topic="t", ts="x")
    assert holds_of(old, Path("a.json")) == ([], "no timeline (written before timelines were kept)")
    never_ran = Artifact(topic="t", ts="x", timeline=Timeline(collected=iso_utc(t)))
    assert holds_of(never_ran, Path("a.json")) == ([], None)
    backwards = art("h", [0], t + 5, t)
    assert "before it starts" in holds_of(backwards, Path("a.json"))[1]
    # a fixture's grant: released after the run; its command's end bounds it
    fixture = art("h", [0], t, t + 5)
    fixture.timeline.lock_released = None
    (hold,), _ = holds_of(fixture, Path("a.json"))
    assert hold.end == parse_iso_utc(fixture.timeline.command_ended)


def test_a_folder_stands_for_its_artifacts(tmp_path):
    for name in ("bench_a.json", "bench_a.20261201T000000Z.json", "bench_a.20261201T000000Z.log", "other.json"):
        (tmp_path / name).write_text("{}")
    assert [p.name for p in artifact_paths([str(tmp_path)])] == ["bench_a.20261201T000000Z.json", "bench_a.json"]


def test_check_over_the_contention_bench_folder_finds_none_and_names_a_hand_made_pair(tmp_path):
    """Sessions queued on one simulated GPU: their artifacts, gathered into one folder, show no two
    runs on the GPU at once; a copy moved onto another run's interval is named with it."""
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "contention.py"),
            "--procs",
            "2",
            "--targets",
            "3",
            "--gpus",
            "1",
            "--duration",
            "0.1",
            "--window",
            "0.3",
            "--keep",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert "lost              : 0 of 6" in out, out
    assert "(6 artifacts): exit 0; exclusivity: 6 runs on 1 GPU(s) of 1 host(s), 0 overlap(s)" in out, out
    hand = next(line for line in out.splitlines() if line.startswith("hand-made pair"))
    assert "exit 1; OVERLAP host" in hand and "bench_hand-made-overlap.json" in hand.split("OVERLAP")[1], hand
    gathered = sorted((tmp_path / "TICKET").glob("*/bench_*.json"))  # each session's ticket folder
    assert len(gathered) == 6, gathered
    for path in gathered:
        tl = json.loads(path.read_text())["timeline"]
        order = [
            parse_iso_utc(tl[k])
            for k in ("collected", "pick_started", "lock_taken", "command_started", "command_ended", "lock_released")
        ]
        assert order == sorted(order), (path.name, tl)
    hand_made = sorted(str(p) for p in (tmp_path / "HAND-MADE").iterdir())  # the pair, in their tickets' folders
    cli = subprocess.run(
        [sys.executable, "-m", "pytest_gpuverify.cli.main", "check", *hand_made],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert cli.returncode == 1 and cli.stdout.count("OVERLAP ") == 1 and "1 overlap(s)" in cli.stdout
    # the copy's timeline was moved in the artifact alone: its raw log's trailer still says where it was
    assert "MISMATCH timeline.lock_taken is " in cli.stdout, cli.stdout
