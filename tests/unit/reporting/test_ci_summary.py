"""The GitHub job summary and annotations, built from verdict properties (no pytest session)."""

from __future__ import annotations

import io

from pytest_gpuverify.reporting import ci_summary as ci


def props(verdict, reason="", **more):
    return {
        "gpuverify_verdict": verdict,
        "gpuverify_reason": reason,
        "gpuverify_artifact": "/t/a.json",
        "gpuverify_gpus": "0",
        "gpuverify_host": "mi300",
        "gpuverify_file": "op_tests/t.py",
        **more,
    }


def test_failures_come_first_and_passes_fold_into_details():
    md = ci.markdown([("a", props("PASS")), ("b", props("FAIL", "SNR low")), ("c", props("INCONCLUSIVE", "x|y"))])
    assert md.index("`b`") < md.index("`c`") < md.index("<details>") < md.index("`a`")
    assert "x\\|y" in md and "1 FAIL, 1 INCONCLUSIVE, 1 PASS" in md


def test_summary_is_cut_under_the_limit_with_a_note():
    many = [(f"t{i}", props("FAIL", "r" * 300)) for i in range(5000)]
    md = ci.markdown(many, limit=100_000)
    assert len(md.encode()) <= 100_000 and "summary cut" in md


def test_annotations_are_escaped_and_capped():
    verdicts = [(f"t{i}", props("FAIL", "50%\nline2", gpuverify_file="a,b:c.py")) for i in range(12)]
    verdicts += [("w", props("INCONCLUSIVE"))]
    lines = ci.annotations(verdicts)
    errors = [line for line in lines if line.startswith("::error")]
    assert len(errors) == 11 and "2 more" in errors[-1]
    assert errors[0].startswith("::error file=a%2Cb%3Ac.py,line=1,title=") and "50%25%0Aline2" in errors[0]
    assert sum(line.startswith("::warning") for line in lines) == 1


def test_nothing_outside_github_unless_a_path_is_given(tmp_path):
    out = io.StringIO()
    step = tmp_path / "step.md"
    ci.publish([("b", props("FAIL"))], environ={"GITHUB_STEP_SUMMARY": str(step)}, stream=out)
    assert out.getvalue() == "" and not step.exists()
    ci.publish([("b", props("FAIL"))], summary_path=str(tmp_path / "s.md"), environ={}, stream=out)
    assert "**FAIL**" in (tmp_path / "s.md").read_text() and out.getvalue() == ""


def test_each_target_end_rewrites_the_sessions_part_and_annotates_once(tmp_path):
    """As each target ends the session's markdown holds every target so far, in the step summary after
    what earlier steps wrote and in --gpu-ci-summary, rewritten (never there twice); each annotation is
    printed once, and the count past 10 only at the session's end."""
    step, mine, out = tmp_path / "step.md", tmp_path / "mine.md", io.StringIO()
    step.write_text("earlier step\n")
    publisher = ci.CiPublisher(str(mine), {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step)}, out)
    verdicts = [("a", props("PASS"))]
    assert publisher.update(verdicts) == []
    assert step.read_text() == "earlier step\n" + ci.markdown(verdicts) and mine.read_text() == ci.markdown(verdicts)
    assert out.getvalue() == ""
    for i in range(12):
        verdicts.append((f"f{i}", props("FAIL", "SNR low")))
        publisher.update(verdicts)
    verdicts.append(("w", props("INCONCLUSIVE")))
    publisher.update(verdicts, final=True)
    assert step.read_text() == "earlier step\n" + ci.markdown(verdicts) and mine.read_text() == ci.markdown(verdicts)
    lines = out.getvalue().splitlines()
    assert lines == ci.annotations(verdicts[1:11]) + [ci.annotation("warning", "w", verdicts[-1][1])] + [
        ci.more_line("error", 2)
    ], lines
    assert publisher.update(verdicts, final=True) == [] and out.getvalue().splitlines() == lines, "said once"


def test_a_summary_that_cannot_be_written_is_one_problem_however_often_it_is_tried(tmp_path):
    publisher = ci.CiPublisher(str(tmp_path / "no" / "s.md"), {}, io.StringIO())
    first = publisher.update([("a", props("PASS"))])
    assert len(first) == 1 and first[0].startswith(f"CI summary not written to {tmp_path / 'no' / 's.md'}: ")
    assert publisher.update([("a", props("PASS"))], final=True) == []
