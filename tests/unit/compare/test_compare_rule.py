"""`gpuverify compare`'s rule on artifacts built in-process (no Docker): only PASS against PASS, like
with like, the run as the unit with measured noise, the clocks, the direction of each figure, the
options and exits, and the handoff's A/B calls."""

from __future__ import annotations

import json
import random
import textwrap

import pytest
from compare_artifacts import artifact

from pytest_gpuverify.cli.handoff import observation
from pytest_gpuverify.cli.main import main
from pytest_gpuverify.compare import render
from pytest_gpuverify.compare.command import Refused, decide, exit_code
from pytest_gpuverify.compare.core import Pair, call
from pytest_gpuverify.config.declarations import DeclarationError, load_declarations
from pytest_gpuverify.parsers.figures import direction_of
from pytest_gpuverify.records.artifact import (
    ClockReading,
    GpuClocks,
    GpuRecord,
    GpuWatch,
    TargetRecord,
    Versions,
)


def noisy(mean: float, cv: float, n: int, rng: random.Random) -> list[float]:
    return [rng.gauss(mean, mean * cv) for _ in range(n)]


# -- 1. only PASS against PASS --------------------------------------------------------------------


@pytest.mark.parametrize("verdict, reason", [("FAIL", "exit code 139"), ("INCONCLUSIVE", "run 2 printed 12 steps")])
def test_a_side_that_is_not_pass_is_refused_naming_side_verdict_and_reason(verdict, reason):
    good = artifact([10.0, 10.1, 9.9, 10.0, 10.05])
    bad = artifact([5.0, 5.1, 4.9, 5.0, 5.05], verdict=verdict, reasons=[reason, "later reason"])
    with pytest.raises(Refused) as head:
        decide(good, bad)
    assert f"the head is {verdict} ({reason})" in str(head.value)
    with pytest.raises(Refused) as base:
        decide(bad, good)
    assert f"the base is {verdict} ({reason})" in str(base.value)


def test_handoff_reports_ab_calls_only_between_pass_artifacts():
    ab_rows = dict(verdict="FAIL", reasons=["run 2 side B: exit code 139"])
    crashed = artifact([10.0] * 5, **ab_rows)
    crashed.perf = [r.model_copy(update={"side": side}) for r in crashed.perf for side in "AB"]
    crashed.correctness.passed = True  # the output's checks passed; the run still crashed
    said = observation(crashed)
    assert "A/B: not compared (the A/B run is FAIL (run 2 side B: exit code 139)" in said and "IMPROVED" not in said
    assert "A/B: not compared (the base is FAIL" in observation(artifact([9.0] * 5), crashed)


# -- 2. like with like ----------------------------------------------------------------------------


def test_unlike_work_is_refused_with_every_difference_unless_allowed():
    base = artifact([10.0, 10.1, 9.9, 10.0, 10.05])
    head = artifact(
        [8.0, 8.1, 7.9, 8.0, 8.05],
        command="python3 /home/dev/aiter/bench/gemm.py 60",
        gpus=[GpuRecord(index=0, arch="gfx950", name="MI355X")],
        image_digest="sha256:bb",
    )
    base.image_digest = "sha256:aa"
    with pytest.raises(Refused) as why:
        decide(base, head)
    text = str(why.value)
    for said in (
        "command",
        "gemm.py 100",
        "gemm.py 60",
        "gpu_model",
        "MI355X",
        "gpu_arch",
        "image",
        "sha256:bb",
        "--may-differ command,gpu_model,gpu_arch,image",
    ):
        assert said in text, text
    allowed = decide(base, head, may_differ=frozenset({"command", "gpu_model", "gpu_arch", "image"}))
    assert [d.field for d in allowed.allowed] == ["command", "gpu_model", "gpu_arch", "image"]
    assert "allowed to differ: gpu_model (GPU model): base MI300X, head MI355X" in render.table(allowed)
    assert "- allowed to differ: command" in render.markdown(allowed)
    assert json.loads(render.as_json(allowed))["allowed_differences"][1] == {
        "field": "gpu_model",
        "base": "MI300X",
        "head": "MI355X",
    }


def test_checkout_paths_are_normalised_and_each_fact_is_compared():
    base = artifact([10.0] * 5, checkout="/home/a/aiter")
    assert decide(base, artifact([10.0] * 5, checkout="/tmp/wt/aiter")).allowed == []  # same command, other checkout
    for change, field in (
        (dict(versions=Versions(torch="2.9.0", hip="7.0", rocm="7.0.1", triton="3.4.0")), "torch"),
        (dict(container=None), "place"),
        (dict(cold=True), "cache"),
        (dict(target=TargetRecord(name="gemm", kind="bench", regime="cold-L2")), "regime"),
        (dict(target=TargetRecord(name="gemm2", kind="bench", regime="warm")), "target"),
        (dict(gpus=[GpuRecord(index=0, arch="gfx942", name="MI300X")] * 2), "gpu_count"),
    ):
        with pytest.raises(Refused, match=f"{field} \\("):
            decide(base, artifact([10.0] * 5, **change))


# -- 3. enough runs, measured noise -----------------------------------------------------------------


def test_single_runs_make_no_call_and_say_how_many_runs_would():
    """One run a side, 2.27x apart (as two single H200 runs of one commit were): no call."""
    result = decide(artifact([10.0]), artifact([22.7]))
    (pair,) = result.pairs
    assert pair.call == "INCONCLUSIVE" and "needs 4 runs per side (base 1, head 1)" in pair.why
    assert exit_code(result.pairs) == 0 and exit_code(result.pairs, fail_on_inconclusive=True) == 1
    one_against_three = decide(artifact([10.0]), artifact([5.0, 5.1, 4.9])).pairs[0]
    assert one_against_three.call == "INCONCLUSIVE"


def test_a_noisy_side_is_inconclusive_noisy():
    wide = call(
        Pair(None, "s", "n", None, "us", "lower", [100.0, 80.0, 120.0, 100.0, 95.0], [50.0, 50.5, 49.5, 50.0, 50.2])
    )
    assert wide.call == "INCONCLUSIVE" and wide.why.startswith("noisy: the base's runs spread CV")
    assert wide.runs_needed is not None and "runs per side would decide" in wide.why
    split = call(
        Pair(None, "s", "n", None, "us", "lower", [100.0, 100.2, 100.1, 112.0, 112.1], [80.0, 80.5, 79.5, 80.0, 80.2])
    )
    assert split.call == "INCONCLUSIVE" and "two clusters (3 near 100.1, 2 near 112)" in split.why


def test_separated_enough_runs_call_both_ways():
    rng = random.Random(7)
    base = noisy(100, 0.02, 5, rng)
    assert call(Pair(None, "s", "n", None, "us", "lower", base, [v * 0.8 for v in base])).call == "IMPROVED"
    assert call(Pair(None, "s", "n", None, "us", "lower", base, [v * 1.25 for v in base])).call == "REGRESSED"
    assert call(Pair(None, "s", "n", None, "us", "lower", base, [v * 1.02 for v in base])).call == "SAME"


def test_rows_of_two_tables_never_pool():
    result = decide(artifact([10.0] * 5, table="fp16:"), artifact([10.0] * 5, table="fp8:"))
    assert {(p.table, len(p.base), len(p.head)) for p in result.pairs} == {("fp16:", 5, 0), ("fp8:", 0, 5)}
    assert "fp16:" in render.table(result).splitlines()[-2]


# -- 4. clocks ------------------------------------------------------------------------------------


def watched(run: int, sm: float, throttle=(), side=None) -> GpuWatch:
    """A run's watch as an artifact written before the events' classes were kept: compare sorts them."""
    clocks = GpuClocks(
        index=0,
        start=ClockReading(sm_mhz=sm),
        end=ClockReading(sm_mhz=sm),
        sm_mhz_min=sm * 0.98,
        sm_mhz_max=sm,
        throttle_seen=list(throttle),
        throttled=bool(throttle),
    )
    return GpuWatch(run=run, side=side, clocks=[clocks])


def classed(run: int, sm: float, unlike=(), normal=()) -> GpuWatch:
    """A run's watch as the engine writes it now: the events in their two classes."""
    clocks = GpuClocks(
        index=0,
        start=ClockReading(sm_mhz=345, throttle=["gpu_idle"]),
        end=ClockReading(sm_mhz=sm),
        sm_mhz_min=345,
        sm_mhz_max=sm,
        throttle_seen=sorted({*unlike, *normal}),
        throttled=bool(unlike),
        unlike_events=list(unlike),
        normal_events=list(normal),
    )
    return GpuWatch(run=run, clocks=[clocks])


def test_throttled_side_or_clocks_apart_make_no_call():
    fast = [8.0, 8.1, 7.9, 8.0, 8.05]
    slow = [10.0, 10.1, 9.9, 10.0, 10.05]
    calm = [watched(i, 1980) for i in range(1, 6)]
    assert decide(artifact(slow, watch=calm), artifact(fast, watch=calm)).pairs[0].call == "IMPROVED"
    hot = calm[:2] + [watched(3, 1700, ["sw_power_cap", "sw_thermal"])] + calm[3:]
    pair = decide(artifact(slow, watch=calm), artifact(fast, watch=hot)).pairs[0]
    assert pair.call == "INCONCLUSIVE" and "the head was throttled in run 3 (GPU 0: sw_thermal)" in pair.why
    lower = [watched(i, 1750) for i in range(1, 6)]
    pair = decide(artifact(slow, watch=calm), artifact(fast, watch=lower)).pairs[0]
    assert (
        pair.call == "INCONCLUSIVE" and "SM clocks differ by 13% (base 1980 MHz, head 1750 MHz; bound 5%)" in pair.why
    )


def test_a_gemm_at_its_power_cap_on_both_sides_is_called_a_thermal_slowdown_on_one_side_is_not():
    """A large GEMM runs at its power cap by design (NVML's sw_power_cap, AMD's PPT): the normal state, noted
    and called; a thermal slowdown in one run of one side makes its rows INCONCLUSIVE, naming run and event."""
    times = [10.0, 10.1, 9.9, 10.0, 10.05]
    capped = [classed(i, 1755, normal=["gpu_idle", "sw_power_cap"]) for i in range(1, 6)]
    result = decide(artifact(times, watch=capped), artifact(times, watch=capped))
    assert [p.call for p in result.pairs] == ["SAME"], result.pairs
    assert (
        "the base reached its power cap in 5 of 5 runs (sw_power_cap): the normal state of a GPU under load, not a veto"
    ) in result.notes
    assert any(n.startswith("the head reached its power cap in 5 of 5 runs") for n in result.notes)
    hot = capped[:3] + [classed(4, 1740, unlike=["hw_thermal"], normal=["sw_power_cap"])] + capped[4:]
    pair = decide(artifact(times, watch=capped), artifact(times, watch=hot)).pairs[0]
    assert pair.call == "INCONCLUSIVE" and pair.why == "the head was throttled in run 4 (GPU 0: hw_thermal)"
    amd = [classed(i, 1900, normal=["ppt0", "tdc_gfx"]) for i in range(1, 6)]  # AMD's power and current limits
    assert [p.call for p in decide(artifact(times, watch=amd), artifact(times, watch=amd)).pairs] == ["SAME"]
    hotspot = amd[:1] + [classed(2, 1900, unlike=["temp_hotspot"], normal=["ppt0"])] + amd[2:]
    pair = decide(artifact(times, watch=hotspot), artifact(times, watch=amd)).pairs[0]
    assert pair.call == "INCONCLUSIVE" and pair.why == "the base was throttled in run 2 (GPU 0: temp_hotspot)"


def test_old_artifacts_throttled_at_the_power_cap_are_called_now():
    """Written when the power cap counted as throttling (``throttled`` true): its events are sorted again."""
    times = [10.0, 10.1, 9.9, 10.0, 10.05]
    old = [watched(i, 1980, ["gpu_idle", "sw_power_cap"]) for i in range(1, 6)]
    assert all(w.clocks[0].throttled for w in old)
    assert [p.call for p in decide(artifact(times, watch=old), artifact(times, watch=old)).pairs] == ["SAME"]
    unknown = old[:4] + [watched(5, 1980, ["throttle_status_0x4"])]  # an AMD number nothing here decodes
    pair = decide(artifact(times, watch=old), artifact(times, watch=unknown)).pairs[0]
    assert pair.call == "INCONCLUSIVE" and pair.why == "the head was throttled in run 5 (GPU 0: throttle_status_0x4)"


def test_ab_artifact_reads_each_sides_watch_and_old_artifacts_get_a_note():
    art = artifact([10.0, 8.0] * 5)
    art.perf = [r.model_copy(update={"side": "AB"[i % 2], "run": i // 2 + 1}) for i, r in enumerate(art.perf)]
    art.watch = [watched(i // 2 + 1, 1980, ["hw_slowdown"] if i == 3 else (), side="AB"[i % 2]) for i in range(10)]
    pair = decide(art, None).pairs[0]
    assert "the head was throttled in run 2 (GPU 0: hw_slowdown)" in pair.why
    result = decide(artifact([10.0] * 5), artifact([10.0] * 5))
    assert any("clocks were not recorded" in n for n in result.notes) and result.pairs[0].call == "SAME"
    assert "note: clocks were not recorded" in render.table(result)


# -- 5. direction ---------------------------------------------------------------------------------


def test_direction_registry():
    lower = ("us", "mean_us", "p99_us", "latency (ms)", "err", "max_abs_error", "mismatch %")
    higher = (
        "TFLOPS",
        "Triton (GB/s)",
        "output tok/s",
        "uplift",
        "speedup",
        "x faster",
        "bandwidth",
        "snr_db",
        "steps/s",
        "samples per second",
    )
    assert {m: direction_of(m) for m in lower} == dict.fromkeys(lower, "lower")
    assert {m: direction_of(m) for m in higher} == dict.fromkeys(higher, "higher")
    assert direction_of("steps") is None and direction_of("steps", directions={"Steps": "higher"}) == "higher"


def test_uplift_up_is_improved_and_unknown_figures_are_never_called():
    runs = dict(uplift=[50.0, 50.2, 49.9, 50.1, 50.0], blocks=[4.0] * 5)
    after = dict(uplift=[57.9, 58.0, 57.8, 58.1, 57.9], blocks=[8.0] * 5)
    result = decide(artifact([10.0] * 5, metrics=runs), artifact([10.0] * 5, metrics=after))
    calls = {p.metric: (p.call, p.why) for p in result.pairs}
    assert calls["uplift"][0] == "IMPROVED"
    assert calls["blocks"] == (
        "NOT COMPARED",
        'direction unknown: declare it, e.g. directions = { "blocks" = "higher" }',
    )
    declared = artifact(
        [10.0] * 5,
        metrics=after,
        target=TargetRecord(name="gemm", kind="bench", regime="warm", directions={"blocks": "lower"}),
    )
    assert {p.metric: p.call for p in decide(artifact([10.0] * 5, metrics=runs), declared).pairs}[
        "blocks"
    ] == "REGRESSED"


def test_declaration_names_a_direction(tmp_path):
    (tmp_path / "b.py").write_text("")
    toml = tmp_path / "gpuverify.toml"
    toml.write_text(
        textwrap.dedent("""\
        directions = { uplift = "lower" }
        [[targets]]
        name = "lab"
        kind = "bench"
        command = "python3 b.py"
        directions = { "Triton (GB/s)" = "higher" }
        """)
    )
    (target,) = load_declarations(toml).targets
    assert target.directions == {"uplift": "lower", "Triton (GB/s)": "higher"}
    toml.write_text(
        '[[targets]]\nname = "lab"\nkind = "bench"\ncommand = "python3 b.py"\ndirections = { uplift = "up" }\n'
    )
    with pytest.raises(DeclarationError, match="directions.uplift.*'up', not a direction.*\"higher\""):
        load_declarations(toml)


# -- 6. options and exits -------------------------------------------------------------------------


@pytest.mark.parametrize("factor", ["inf", "nan", "1", "0.9", "-inf"])
def test_factor_must_be_finite_and_above_one(capsys, factor):
    assert main(["compare", f"--factor={factor}", "x.json"]) == 2
    assert "a factor must be a finite number above 1" in capsys.readouterr().err


def test_may_differ_names_a_known_fact(capsys):
    assert main(["compare", "--may-differ", "gpu_model,colour", "a.json", "b.json"]) == 2
    err = capsys.readouterr().err
    assert "--may-differ colour: not a fact compare checks" in err and "gpu_model" in err.split("name some of")[1]


def test_exit_codes():
    base = artifact([10.0, 10.1, 9.9, 10.0, 10.05])
    worse = decide(base, artifact([12.0, 12.1, 11.9, 12.0, 12.05])).pairs
    assert exit_code(worse) == 1
    assert exit_code(decide(base, artifact([10.0])).pairs) == 0


def test_watch_records_without_clocks_say_why_they_were_not_checked():
    unread = [GpuWatch(run=i, problems=["nvmlDeviceGetClockInfo: not supported"]) for i in range(1, 6)]
    calm = [watched(i, 1980) for i in range(1, 6)]
    result = decide(artifact([10.0] * 5, watch=calm), artifact([10.0] * 5, watch=unread))
    assert (
        "the head's clocks were not read in 5 of 5 runs (nvmlDeviceGetClockInfo: not supported): "
        "throttling there not checked"
    ) in result.notes
    assert result.pairs[0].call == "SAME"
