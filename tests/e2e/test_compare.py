"""`gpuverify compare`: the statistics, and the calls on real engine artifacts of lab-style A/B harnesses."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest
from ab_harness import BASE, FAILED, HARNESS, PASSED

from pytest_gpuverify.cli.main import main
from pytest_gpuverify.compare.core import Pair, call

CASES = {  # base's per-round times, head's per-round times
    "faster": (BASE, [8.0, 8.1, 7.9, 8.0, 8.05]),  # 20% faster, separated
    "slightly": (BASE, [9.7, 9.8, 9.6, 9.7, 9.75]),  # 3% faster: within the factor
    "overlap": ([10.0, 7.0, 11.0, 9.0, 12.0], [8.8, 12.0, 6.5, 9.0, 10.0]),  # runs spread CV 20%: noisy
    "slower": (BASE, [12.0, 12.1, 11.9, 12.0, 12.05]),  # 20% slower
    "single": ([10.0], [4.0]),  # one round a side: 2.5x apart proves nothing
}
# the harness's own 5 rounds printed in one process (no run numbers): one process a side, n = 1, never a
# call, though its rounds are 7% apart and never overlap (they were once counted as 5 runs: REGRESSED)
ROUNDS = (BASE, [10.7, 10.8, 10.6, 10.7, 10.75])


def test_runs_that_overlap_in_the_tails_call_when_the_t_on_logs_separates_them():
    base = [10.0, 10.2, 9.8, 10.1, 9.9, 10.0]
    head = [11.0, 9.95, 11.2, 10.9, 11.1, 11.0]  # one head run (9.95) below three base runs: not separated
    pair = call(Pair(None, "s", "n", None, "TFLOPS", "higher", base, head))
    assert min(head) < max(base) and pair.p is not None and pair.p < 0.05
    assert pair.call == "IMPROVED" and "q = 0.0" in pair.why and pair.ci_low > 1.0, pair.why


def test_throughput_and_time_run_the_right_way_round():
    base, head = [10.0, 10.1, 9.9, 10.0, 10.05], [8.0, 8.1, 7.9, 8.0, 8.05]
    time = call(Pair(None, "s", "n", "median", "us", "lower", base, head))
    tput = call(Pair(None, "s", "n", "median", "TFLOPS", "higher", base, head))
    assert (time.call, tput.call) == ("IMPROVED", "REGRESSED")


@pytest.fixture(scope="module")
def ab(tmp_path_factory, docker_client) -> dict[str, Path]:
    from kernel_repos import commit
    from sandboxes import make_sandbox

    with make_sandbox(tmp_path_factory.mktemp("compare") / "host", docker_client) as box:
        toml = []
        for case, (base, head) in CASES.items():  # one round per run: repeats = rounds
            (box.repo / "bench" / f"ab_{case}.py").write_text(
                HARNESS.format(base=base, head=head, check=PASSED, rounds=False)
            )
            toml.append(
                f'[[targets]]\nname = "ab-{case}"\nkind = "bench"\ncommand = "python3 bench/ab_{case}.py"\n'
                f"repeats = {len(base)}\n"
            )
        (box.repo / "bench" / "ab_rounds.py").write_text(
            HARNESS.format(base=ROUNDS[0], head=ROUNDS[1], check=PASSED, rounds=True)
        )
        toml.append('[[targets]]\nname = "ab-rounds"\nkind = "bench"\ncommand = "python3 bench/ab_rounds.py"\n')
        for case, check in (("unchecked", ""), ("failing", FAILED)):  # not PASS: INCONCLUSIVE, FAIL
            (box.repo / "bench" / f"ab_{case}.py").write_text(
                HARNESS.format(base=BASE, head=[5.0] * 5, check=check, rounds=True)
            )
            toml.append(f'[[targets]]\nname = "ab-{case}"\nkind = "bench"\ncommand = "python3 bench/ab_{case}.py"\n')
        (box.repo / "gpuverify.toml").write_text("\n".join(toml))
        commit(box.repo, "lab-style A/B harnesses")
        proc = box.pytest("gpuverify.toml")
        paths = {
            case: box.tickets / "T-1" / f"bench_ab-{case}.json" for case in [*CASES, "rounds", "unchecked", "failing"]
        }
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
@pytest.mark.parametrize(
    "case, expected, code",
    [
        ("faster", "IMPROVED", 0),
        ("slightly", "SAME", 0),
        ("overlap", "INCONCLUSIVE", 0),
        ("slower", "REGRESSED", 1),
        ("single", "INCONCLUSIVE", 0),
    ],
)
def test_lab_harness_calls_per_row(ab, capsys, case, expected, code):
    got, pairs = compared(ab[case], capsys)
    assert got == code
    assert {(p["metric"], p["shape"].split(",")[0]) for p in pairs} == {
        (m, s) for m in ("us", "TFLOPS") for s in ("M=1", "M=128")
    }
    assert all(p["call"] == expected for p in pairs), [(p["metric"], p["call"], p["why"]) for p in pairs]
    assert all(len(p["base"]) == len(p["head"]) == len(CASES[case][0]) for p in pairs)
    if case == "overlap":
        assert all(p["why"].startswith("noisy: the base's runs spread CV") and p["runs_needed"] >= 4 for p in pairs)
    if case == "single":
        assert all(p["why"].startswith("needs 4 runs per side (base 1, head 1)") for p in pairs)
    if case in ("faster", "slower", "slightly"):  # the interval with every call
        assert all(p["ci_low"] < p["ratio"] < p["ci_high"] and p["q"] is not None for p in pairs)


@pytest.mark.docker
def test_a_harness_rounds_in_one_process_are_one_run(ab, capsys):
    code, pairs = compared(ab["rounds"], capsys)
    assert code == 0 and len(pairs) == 4
    assert all(
        p["call"] == "INCONCLUSIVE"
        and p["why"].startswith("needs 4 runs per side (base 1, head 1)")
        and len(p["base"]) == len(p["head"]) == 1
        for p in pairs
    ), pairs


@pytest.mark.docker
def test_table_markdown_and_factor(ab, capsys):
    capsys.readouterr()
    assert main(["compare", str(ab["faster"])]) == 0
    table = capsys.readouterr().out
    assert "IMPROVED" in table and "TFLOPS ↑" in table and "us ↓" in table
    assert main(["compare", "--markdown", str(ab["slower"])]) == 1
    markdown = capsys.readouterr().out
    assert markdown.startswith("- rule: Welch's t on the runs' logs") and "the factor 1.05" in markdown.splitlines()[0]
    assert "\n| shape | name |" in markdown and "- geomean gain over 2 row(s) (us): " in markdown
    code, pairs = compared(ab["faster"], capsys, "--factor", "1.5")  # 20% does not pass a factor of 1.5
    assert code == 0 and {p["call"] for p in pairs} == {"SAME"}


@pytest.mark.docker
def test_two_artifacts_and_refusals(ab, capsys, tmp_path):
    capsys.readouterr()
    # the same artifact as base and head: a run against itself says nothing, refused in one line
    assert main(["compare", "--json", str(ab["faster"]), str(ab["faster"])]) == 2
    got = capsys.readouterr()
    assert got.out == "" and got.err.count("\n") == 1 and "are the same artifact (sha256 " in got.err, got.err
    here = tmp_path / ab["slower"].parent.name  # the ticket's name: only the tampering fails check
    shutil.copytree(ab["slower"].parent, here)
    copy = here / ab["slower"].name
    data = json.loads(copy.read_text())
    data["perf"][1]["us_median"] = 1.0  # tampered: check refuses it
    copy.write_text(json.dumps(data))
    assert main(["compare", str(copy)]) == 2
    assert f"{copy}: fails gpuverify check" in capsys.readouterr().err
    # no correctness printed (INCONCLUSIVE), a failed check (FAIL): not PASS, never compared; the side named
    assert main(["compare", str(ab["unchecked"])]) == 2
    assert f"refused: {ab['unchecked']} is INCONCLUSIVE (" in capsys.readouterr().err
    assert main(["compare", str(ab["faster"]), str(ab["failing"])]) == 2
    err = capsys.readouterr().err
    assert f"the head ({ab['failing']}) is FAIL (" in err and "only PASS is compared against PASS" in err
    assert main(["compare", str(ab["failing"]), str(ab["faster"])]) == 2
    assert f"the base ({ab['failing']}) is FAIL (" in capsys.readouterr().err


@pytest.mark.docker
def test_unlike_targets_are_refused_unless_allowed(ab, capsys):
    capsys.readouterr()
    assert main(["compare", str(ab["faster"]), str(ab["slower"])]) == 2
    err = capsys.readouterr().err
    assert "not like work: target (target name and kind): base ab-faster (bench), head ab-slower (bench)" in err
    assert "command (command with its arguments (checkout paths normalised)): base python3 bench/ab_faster.py" in err
    assert "--may-differ target,command" in err
    code = main(
        ["compare", "--json", "--may-differ", "target", "--may-differ", "command", str(ab["faster"]), str(ab["slower"])]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and [d["field"] for d in doc["allowed_differences"]] == ["target", "command"]
    assert main(["compare", "--may-differ", "target,command", str(ab["faster"]), str(ab["slower"])]) == 1
    assert (
        "allowed to differ: target (target name and kind): base ab-faster (bench), head ab-slower"
        in capsys.readouterr().out
    )


def test_factor_must_be_above_one(capsys):
    assert main(["compare", "--factor", "0.9", "x.json"]) == 2
    assert "must be a finite number above 1" in capsys.readouterr().err


# -- gpuverify handoff on the same ticket folder of real artifacts ---------------------------------


def handoff(capsys, *argv: str) -> tuple[int, dict, str]:
    capsys.readouterr()
    code = main(["handoff", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 and out.strip() else {}), err


@pytest.mark.docker
def test_handoff_numbers_are_the_artifacts_and_the_schema_holds(ab, capsys, tmp_path):
    from pytest_gpuverify.cli.handoff import Handoff
    from pytest_gpuverify.records.artifact import read_artifact

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
    assert len(runs) == 8 and doc["salientSummary"] == f"8 artifact(s) in {ticket.name}: 6 PASS, 1 FAIL, 1 INCONCLUSIVE"
    faster = read_artifact(ab["faster"])
    run = runs[faster.command]
    assert run["exitCode"] == faster.exit_code == 0
    shapes = faster.correctness.shapes_checked
    assert run["observation"].startswith(f"PASS; {shapes} shape{'' if shapes == 1 else 's'} checked")
    head_us = [r.us_median for r in faster.perf if r.side == "B" and r.shape.startswith("M=1,")]
    assert f"-> {statistics.fmean(head_us)!r} (IMPROVED)" in run["observation"]  # the mean of the head's runs
    assert (
        "A/B: not compared (the A/B run is INCONCLUSIVE" in runs[read_artifact(ab["unchecked"]).command]["observation"]
    )
    failing = runs[read_artifact(ab["failing"]).command]["observation"]
    assert "A/B: not compared (the A/B run is FAIL" in failing and "REGRESSED" not in failing
    # --base: each topic against the base folder's artifact of the same topic (here itself: all SAME)
    code, based, err = handoff(capsys, str(ticket), "--base", str(ticket))
    assert code == 0, err
    assert (
        "A/B: 4 SAME" in {r["command"]: r for r in based["verification"]["commandsRun"]}[faster.command]["observation"]
    )
    # -o writes the same document
    out = tmp_path / "handoff.json"
    assert main(["handoff", str(ticket), "-o", str(out)]) == 0
    assert json.loads(out.read_text())["salientSummary"] == doc["salientSummary"]


@pytest.mark.docker
def test_handoff_refuses_a_tampered_artifact(ab, capsys, tmp_path):
    here = tmp_path / ab["faster"].parent.name  # the ticket's name: only the tampering fails check
    shutil.copytree(ab["faster"].parent, here)
    victim = here / ab["overlap"].name
    data = json.loads(victim.read_text())
    data["verdict"] = "PASS" if data["verdict"] != "PASS" else "FAIL"
    victim.write_text(json.dumps(data))
    code, doc, err = handoff(capsys, str(here))
    assert code == 2 and doc == {}
    assert f"refused: {victim}: fails gpuverify check" in err
