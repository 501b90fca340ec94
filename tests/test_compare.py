"""`gpuverify compare`: the statistics, and the calls on real engine artifacts of lab-style A/B harnesses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_gpuverify.cli.main import main
from pytest_gpuverify.compare import stats
from pytest_gpuverify.compare.core import Pair, call

# A lab-style harness: a correctness line, then per-round rows, A then B, 3 rounds; the head (B) is
# `times[i]` x the base's time, and prints TFLOPS (higher is better) inverse to its time.
HARNESS = '''import itertools
{check}
print("side    M      N      K   us_median    TFLOPS")
base = {base}
head = {head}
for rnd, side in itertools.product(range(3), "AB"):
    for m, scale in ((1, 1.0), (128, 4.0)):
        us = (base if side == "A" else head)[rnd] * scale
        print(f"{{side}}   {{m:4d}}   1280   8192   {{us:9.3f}}   {{1000.0 / us:8.3f}}")
'''
PASSED = 'print("[checkAllclose atol=0.01 rtol=0.01 passed~]")'
CASES = {  # base's per-round times, head's per-round times
    "faster": ([10.0, 10.1, 9.9], [8.0, 8.1, 7.9]),  # 20% faster, separated
    "slightly": ([10.0, 10.1, 9.9], [9.5, 9.6, 9.4]),  # 5% faster
    "overlap": ([10.0, 7.0, 11.0], [8.8, 12.0, 6.5]),  # medians 10.0 vs 8.8: 12% apart, runs overlap
    "slower": ([10.0, 10.1, 9.9], [12.0, 12.1, 11.9]),  # 20% slower
}


def test_runs_to_decide_is_the_exact_u_minimum():
    assert stats.runs_to_decide(0.002) == 6  # 1/C(12,6) = 0.00108; 1/C(10,5) = 0.00397
    assert stats.u_pvalue(range(6), range(6, 12)) == pytest.approx(1 / 924)
    assert stats.runs_to_decide(0.05) == 4  # 1/C(6,3) = 0.05 is not < 0.05; 1/C(8,4) is


def test_median_ci_needs_enough_runs_for_99_percent():
    assert stats.median_ci([1.0, 2.0, 3.0]) is None
    assert stats.median_ci([float(i) for i in range(8)]) == (0.0, 7.0)  # 1 - 2/256 >= 0.99
    assert stats.median_ci([float(i) for i in range(20)], 0.99) == (3.0, 16.0)


def test_ci_separation_calls_when_runs_overlap_only_in_the_tails():
    base = [5.0] * 2 + [10.0] * 18
    head = [9.0] * 2 + [13.0] * 18  # a head run (9) below a base run (10): not separated; CIs (10,10), (13,13)
    pair = call(Pair("s", "n", None, "TFLOPS", True, base, head))
    assert pair.call == "IMPROVED" and "confidence intervals" in pair.why


def test_throughput_and_time_run_the_right_way_round():
    time = call(Pair("s", "n", "median", "us", False, [10.0, 10.1, 9.9], [8.0, 8.1, 7.9]))
    tput = call(Pair("s", "n", "median", "TFLOPS", True, [10.0, 10.1, 9.9], [8.0, 8.1, 7.9]))
    assert (time.call, tput.call) == ("IMPROVED", "REGRESSED")


@pytest.fixture(scope="module")
def ab(tmp_path_factory, docker_client) -> dict[str, Path]:
    from conftest import make_sandbox
    from test_e2e_kinds import commit

    with make_sandbox(tmp_path_factory.mktemp("compare") / "host", docker_client) as box:
        toml = []
        for case, (base, head) in CASES.items():
            (box.repo / "bench" / f"ab_{case}.py").write_text(HARNESS.format(base=base, head=head, check=PASSED))
            toml.append(f'[[targets]]\nname = "ab-{case}"\nkind = "bench"\ncommand = "python3 bench/ab_{case}.py"\n')
        (box.repo / "bench" / "ab_unchecked.py").write_text(HARNESS.format(base=[1, 1, 1], head=[1, 1, 1], check=""))
        toml.append('[[targets]]\nname = "ab-unchecked"\nkind = "bench"\ncommand = "python3 bench/ab_unchecked.py"\n')
        (box.repo / "gpuverify.toml").write_text("\n".join(toml))
        commit(box.repo, "lab-style A/B harnesses")
        proc = box.pytest("gpuverify.toml")
        paths = {case: box.tickets / "T-1" / f"bench_ab-{case}.json" for case in [*CASES, "unchecked"]}
        for case, path in paths.items():
            assert path.exists(), proc.stdout.decode()[-3000:]
            assert main(["check", str(path)]) == 0, case
        return paths


def compared(path: Path, capsys, *extra: str) -> tuple[int, list[dict]]:
    capsys.readouterr()
    code = main(["compare", "--json", *extra, str(path)])
    out = capsys.readouterr().out
    return code, json.loads(out)["pairs"] if out.strip() else []


@pytest.mark.docker
@pytest.mark.parametrize("case, expected, code", [
    ("faster", "IMPROVED", 0), ("slightly", "SAME", 0), ("overlap", "INCONCLUSIVE", 0), ("slower", "REGRESSED", 1),
])
def test_lab_harness_calls_per_row(ab, capsys, case, expected, code):
    got, pairs = compared(ab[case], capsys)
    assert got == code
    assert {(p["metric"], p["shape"].split(",")[0]) for p in pairs} == {
        (m, s) for m in ("us", "TFLOPS") for s in ("M=1", "M=128")}
    assert all(p["call"] == expected for p in pairs), [(p["metric"], p["call"], p["why"]) for p in pairs]
    assert all(len(p["base"]) == len(p["head"]) == 3 for p in pairs)
    if expected == "INCONCLUSIVE":
        assert all("6+ runs per side" in p["why"] and "Mann-Whitney" in p["why"] for p in pairs)


@pytest.mark.docker
def test_table_markdown_and_factor(ab, capsys):
    capsys.readouterr()
    assert main(["compare", str(ab["faster"])]) == 0
    table = capsys.readouterr().out
    assert "IMPROVED" in table and "TFLOPS ↑" in table and "us ↓" in table
    assert main(["compare", "--markdown", str(ab["slower"])]) == 1
    assert capsys.readouterr().out.startswith("| shape | name |")
    code, pairs = compared(ab["faster"], capsys, "--factor", "1.5")  # 20% does not pass a factor of 1.5
    assert code == 0 and {p["call"] for p in pairs} == {"SAME"}


@pytest.mark.docker
def test_two_artifacts_and_refusals(ab, capsys, tmp_path):
    capsys.readouterr()
    # the same artifact as base and head: every row SAME
    assert main(["compare", "--json", str(ab["faster"]), str(ab["faster"])]) == 0
    assert {p["call"] for p in json.loads(capsys.readouterr().out)["pairs"]} == {"SAME"}
    here = tmp_path / "t"
    shutil.copytree(ab["slower"].parent, here)
    copy = here / ab["slower"].name
    data = json.loads(copy.read_text())
    data["perf"][1]["us_median"] = 1.0  # tampered: check refuses it
    copy.write_text(json.dumps(data))
    assert main(["compare", str(copy)]) == 2
    assert f"{copy}: fails gpuverify check" in capsys.readouterr().err
    # no correctness printed: not PASS, never compared
    assert main(["compare", str(ab["unchecked"])]) == 2
    assert "correctness is not PASS" in capsys.readouterr().err
    assert main(["compare", str(ab["faster"]), str(ab["unchecked"])]) == 2


def test_factor_must_be_above_one(capsys):
    assert main(["compare", "--factor", "0.9", "x.json"]) == 2
    assert "must be above 1" in capsys.readouterr().err


# -- gpuverify handoff on the same ticket folder of real artifacts ---------------------------------

def handoff(capsys, *argv: str) -> tuple[int, dict, str]:
    capsys.readouterr()
    code = main(["handoff", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 and out.strip() else {}), err


@pytest.mark.docker
def test_handoff_numbers_are_the_artifacts_and_the_schema_holds(ab, capsys, tmp_path):
    from pytest_gpuverify.engine.artifact import read_artifact
    from pytest_gpuverify.cli.handoff import Handoff

    ticket = ab["faster"].parent
    code, doc, err = handoff(capsys, str(ticket))
    assert code == 0, err
    Handoff.model_validate(doc)
    capsys.readouterr()
    assert main(["schema", "--handoff"]) == 0
    schema = json.loads(capsys.readouterr().out)
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, schema)
    # what a person writes is left empty, never invented
    assert doc["whatWasImplemented"] == "" and doc["tests"] == {"added": []} and doc["discoveredIssues"] == []
    runs = {r["command"]: r for r in doc["verification"]["commandsRun"]}
    assert len(runs) == 5 and doc["salientSummary"] == f"5 artifact(s) in {ticket.name}: 4 PASS, 1 INCONCLUSIVE"
    faster = read_artifact(ab["faster"])
    run = runs[faster.command]
    assert run["exitCode"] == faster.exit_code == 0
    shapes = faster.correctness.shapes_checked
    assert run["observation"].startswith(f"PASS; {shapes} shape{'' if shapes == 1 else 's'} checked")
    head_us = [r.us_median for r in faster.perf if r.side == "B" and r.shape.startswith("M=1,")]
    assert f"-> {sorted(head_us)[1]!r} (IMPROVED)" in run["observation"]  # the head's median, as printed
    assert "A/B: not compared" in runs[read_artifact(ab["unchecked"]).command]["observation"]
    # --base: each topic against the base folder's artifact of the same topic (here itself: all SAME)
    code, based, err = handoff(capsys, str(ticket), "--base", str(ticket))
    assert code == 0, err
    assert "A/B: 4 SAME" in {r["command"]: r for r in based["verification"]["commandsRun"]}[faster.command]["observation"]
    # -o writes the same document
    out = tmp_path / "handoff.json"
    assert main(["handoff", str(ticket), "-o", str(out)]) == 0
    assert json.loads(out.read_text())["salientSummary"] == doc["salientSummary"]


@pytest.mark.docker
def test_handoff_refuses_a_tampered_artifact(ab, capsys, tmp_path):
    here = tmp_path / "T"
    shutil.copytree(ab["faster"].parent, here)
    victim = here / ab["overlap"].name
    data = json.loads(victim.read_text())
    data["verdict"] = "PASS" if data["verdict"] != "PASS" else "FAIL"
    victim.write_text(json.dumps(data))
    code, doc, err = handoff(capsys, str(here))
    assert code == 2 and doc == {}
    assert f"refused: {victim}: fails gpuverify check" in err
