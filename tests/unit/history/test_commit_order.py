"""History in the order of the commit graph, on a real git repo (commit_graph_lab.py: c1..c20 on main
with a merged side branch and an unmerged one) and a real store: one point per commit however often and
whenever it ran, points in main's first-parent order, a step's range only from an ancestor to its
descendant, and compare's base only from the head's ancestors (last good, or the release tag)."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path

import pytest
from commit_graph_lab import Lab, artifact_at, make_lab, stored, stored_artifact

from pytest_gpuverify.cli.main import main
from pytest_gpuverify.compare import render
from pytest_gpuverify.compare.command import Refused
from pytest_gpuverify.engine.store import store_artifact
from pytest_gpuverify.history.compare import against_history, baseline_problem
from pytest_gpuverify.history.db import connect
from pytest_gpuverify.history.reader import StoreReader
from pytest_gpuverify.history.series import commit_order, target_histories
from pytest_gpuverify.history.store import insert, runs

MAIN = [f"c{i}" for i in range(1, 21)]
BEFORE, AFTER = 10.0, 12.0  # c1..c10 run at 10 us, the merge c11 and after at 12 us


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Lab:
    return make_lab(tmp_path_factory.mktemp("graph") / "repo")


def level(name: str) -> float:
    i = int(name[1:])
    return (BEFORE if i <= 10 else AFTER) * (1 + 0.002 * (i % 3))


@pytest.fixture
def store(lab, tmp_path) -> Path:
    """Main's 20 commits run in order; the side and other branches' commits run between them (at 20 us:
    a step if they were drawn); then a re-run CI job and a bisect re-run old commits, newest in time."""
    path = tmp_path / "h.db"
    with closing(connect(path)) as conn:
        n = 0
        for name in MAIN:
            n += 1
            insert(conn, stored(lab.sha[name], n, [level(name)] * 3))
            if name in ("c9", "c10"):  # the side branch runs while main moves on
                for side in ("s1", "s2", "s3") if name == "c9" else ():
                    n += 1
                    insert(conn, stored(lab.sha[side], n, [20.0] * 3, ref="side"))
        for other in ("o1", "o2", "o3", "o4"):
            n += 1
            insert(conn, stored(lab.sha[other], n, [20.0] * 3, ref="other"))
        for name in ("c2", "c3", "c4", "c5", "c16"):  # re-runs of old commits, after c20 in time
            n += 1
            insert(conn, stored(lab.sha[name], n, [level(name)] * 3))
    return path


def stored_runs(store: Path, target: str = "t"):
    with closing(connect(store)) as conn:
        return runs(conn, target=target)


def test_points_follow_main_and_a_rerun_joins_its_commits_point(lab, store):
    kept, order = commit_order(stored_runs(store), "main", lab.repo)
    (history,) = target_histories(kept, order=order)
    (row,) = history.rows
    assert [p.sha for p in row.points] == [lab.sha[c] for c in MAIN]  # no second point for c2..c5, c16
    assert [len(p.values) for p in row.points[1:5]] == [6, 6, 6, 6] and len(row.points[0].values) == 3
    # one step, at the merge: never a false IMPROVED c20..c2 from the re-runs drawn last
    assert [(s.index, s.call) for s in row.steps] == [(10, "REGRESSED")]
    assert row.step_range(row.steps[0]) == f"{lab.short('c10')}..{lab.short('c11')}"
    assert order.notes == (f"7 run(s) of 7 commit(s) not on main's first-parent history in {lab.repo}: not plotted",)


def test_without_the_ref_the_checkouts_head_is_the_history(lab, store):
    kept, order = commit_order(stored_runs(store), None, lab.repo)  # the lab's HEAD is main
    assert order.line is not None and order.line.ref == "HEAD" and len(kept) == 25


def test_without_a_checkout_commits_keep_the_order_they_first_ran_and_steps_name_no_range(lab, store, tmp_path):
    elsewhere = tmp_path / "no-repo"
    elsewhere.mkdir()
    kept, order = commit_order(stored_runs(store), "main", elsewhere)  # the runs stored as on main
    (history,) = target_histories(kept, order=order)
    (row,) = history.rows
    assert [p.sha for p in row.points] == [lab.sha[c] for c in MAIN]
    (step,) = row.steps
    assert row.step_range(step) == (
        f"after {lab.short('c10')}, at {lab.short('c11')} (no commit range: ordered by "
        "run time, not checked against the commit graph)"
    )
    (note,) = order.notes
    assert note.startswith(
        f"commits in the order they first ran, not by the commit graph ({elsewhere}: not in a git "
        "checkout); step ranges"
    )
    assert "step ranges are not graph-checked. Fix: run in the code's git checkout, or name it with --repo PATH" in note


def test_a_range_is_printed_only_from_an_ancestor(lab, tmp_path):
    """Runs labelled by hand with a ref git does not have: drawn by time, c12..c15 then o1..o4 (the other
    branch, made from c5): the step between c15 and o1 is real, but c15 is no ancestor of o1."""
    path = tmp_path / "h.db"
    with closing(connect(path)) as conn:
        for n, name in enumerate(["c12", "c13", "c14", "c15", "o1", "o2", "o3", "o4"]):
            insert(conn, stored(lab.sha[name], n, [10.0 if name[0] == "c" else 12.0] * 3, ref="nightly"))
    kept, order = commit_order(stored_runs(path), "nightly", lab.repo)
    assert order.line is None and order.checkout is not None
    (history,) = target_histories(kept, order=order)
    (step,) = history.rows[0].steps
    assert history.rows[0].step_range(step) == (
        f"after {lab.short('c15')}, at {lab.short('o1')} (no commit range: "
        f"{lab.short('c15')} is not an ancestor of {lab.short('o1')})"
    )


def test_history_show_draws_main_with_one_step(lab, store, capsys):
    assert main(["history", "show", "t", "--store", str(store), "--ref", "main", "--repo", str(lab.repo)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert sum(line.startswith("    ") and "median" in line for line in lines) == 20, out
    assert out.count("REGRESSED") == 1 and f"REGRESSED {lab.short('c10')}..{lab.short('c11')}:" in out
    assert lines[0].startswith("t: 25 PASS run(s) on main;")
    assert lines[-1] == f"(7 run(s) of 7 commit(s) not on main's first-parent history in {lab.repo}: not plotted)"
    assert main(["history", "show", "t", "--store", str(store), "--ref", "nosuch", "--repo", str(lab.repo)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"gpuverify history show: {store} holds no run of t on nosuch; commits in the order they first "
        f"ran, not by the commit graph (nosuch: not a branch, tag or commit in the checkout at {lab.repo})"
    )
    assert err.count("\n") == 1


# -- compare --history: the base from the head's ancestors -----------------------------------------


def compare_store(lab: Lab, tmp_path: Path, names: list[str], late: tuple[str, ...] = ()) -> Path:
    """Each named commit's artifact (5 runs at its level), in order; then the ``late`` ones run again."""
    path = tmp_path / "h.db"
    with closing(connect(path)) as conn:
        for n, name in enumerate([*names, *late]):
            insert(
                conn,
                stored_artifact(
                    artifact_at(lab.repo, lab.sha[name], [level(name) * (1 + 0.001 * k) for k in range(5)]), n
                ),
            )
    return path


def head_file(lab: Lab, tmp_path: Path, name: str, us: float) -> tuple:
    art = artifact_at(lab.repo, lab.sha[name], [us * (1 + 0.001 * k) for k in range(5)])
    path = tmp_path / "head" / "bench_gemm.json"
    path.parent.mkdir(exist_ok=True)
    store_artifact(art, path, None)
    return art, str(path)


def compared(lab, store, head, ref="main", last=3, baseline="last-good", repo=None):
    art, path = head
    with closing(StoreReader(store)) as reader:
        return against_history(reader, str(store), art, path, ref, last, baseline=baseline, repo=repo or lab.repo)


def test_a_head_with_later_commits_in_the_store_takes_only_its_ancestors(lab, tmp_path):
    """The head at c10 (10 us) with c11..c20 (12 us) newer in the store and old commits re-run last: the
    base is c9, c8, c7, never a descendant (which would call c10 IMPROVED 17%) nor a re-run's time."""
    store = compare_store(lab, tmp_path, MAIN, late=("c2", "c3", "c10"))
    result = compared(lab, store, head_file(lab, tmp_path, "c10", BEFORE))
    header = result.notes[0]
    assert header.startswith(
        f"base: the last 3 commit(s) with PASS runs on main below the head {lab.short('c10')} "
        f"(each an ancestor of it), 3 run(s) in {store}: {lab.short('c9')} (1 run(s)), "
        f"{lab.short('c8')} (1 run(s)), {lab.short('c7')} (1 run(s))"
    ), header
    (pair,) = result.pairs
    assert len(pair.base) == 15 and pair.call != "IMPROVED"
    slower = compared(lab, store, head_file(lab, tmp_path, "c10", BEFORE * 1.2))
    assert slower.pairs[0].call == "REGRESSED"


def test_a_head_off_main_takes_main_below_its_branch_point_or_its_own_history(lab, tmp_path):
    store = compare_store(lab, tmp_path, [*MAIN, "s1", "s2", "s3"])
    head = head_file(lab, tmp_path, "s3", BEFORE)
    on_main = compared(lab, store, head).notes[0]
    assert all(lab.short(c) in on_main for c in ("c8", "c7", "c6")) and lab.short("s1") not in on_main
    own = compared(lab, store, head, ref=None).notes[0]
    assert own.startswith(
        f"base: the last 3 commit(s) with PASS runs on its first-parent history below the head {lab.short('s3')}"
    ), own
    assert [c in own for c in ("s2", "s1", "c8")] and lab.short("c9") not in own
    assert all(lab.short(c) in own for c in ("s2", "s1", "c8"))


def test_a_store_of_descendants_only_is_refused_never_a_base(lab, tmp_path):
    """As on the H200: the store holds three descendants of the head (and the head's own commit)."""
    store = compare_store(lab, tmp_path, ["c10", "c11", "c12", "c13"])
    with pytest.raises(Refused) as refused:
        compared(lab, store, head_file(lab, tmp_path, "c10", BEFORE))
    said = str(refused.value)
    assert said == (
        f"{store} holds no PASS run of gemm with the head's facts on main below the head {lab.short('c10')}; "
        "its 4 other run(s) are of the head's commit, later commits or other histories. Fix: add runs of an "
        "ancestor (gpuverify history add), name another --ref or --baseline, or --may-differ NAME where a "
        "fact may differ"
    )


def test_the_release_baseline_is_the_newest_tag_below_the_head(lab, tmp_path):
    store = compare_store(lab, tmp_path, MAIN)
    head = head_file(lab, tmp_path, "c10", BEFORE)
    nearest = compared(lab, store, head, baseline="release")
    assert nearest.notes[0] == (
        f"base: release nightly-9, commit {lab.short('c9')} (1 run(s)), an ancestor of the head "
        f"{lab.short('c10')}, in {store}"
    )
    assert len(nearest.pairs[0].base) == 5
    assert lab.short("c6") in compared(lab, store, head, baseline="release:v*").notes[0]
    on_tag = compared(lab, store, head_file(lab, tmp_path, "c6", BEFORE), baseline="release:v*").notes[0]
    assert on_tag.startswith("base: release v0.9,")  # a tag on the head's own commit is the head, not its base
    with pytest.raises(
        Refused,
        match=r"no release tag matching rc-\* is reachable from .*\^ in the checkout at .* "
        r"Fix: fetch the tags \(git fetch --tags\)",
    ):
        compared(lab, store, head, baseline="release:rc-*")


def test_a_head_no_checkout_has_is_refused_with_the_fix(lab, tmp_path):
    store = compare_store(lab, tmp_path, MAIN)
    other = tmp_path / "not-a-repo"
    other.mkdir()
    with pytest.raises(Refused) as refused:
        compared(lab, store, head_file(lab, tmp_path, "c10", BEFORE), repo=other)
    assert str(refused.value).startswith(f"no git checkout here has the head's commit {lab.short('c10')} ({other}: ")
    assert str(refused.value).endswith(
        "Fix: run in the checkout of its repo, or name it with --repo PATH (git fetch it first)"
    )


def test_baseline_and_repo_options_are_checked(capsys, tmp_path):
    assert baseline_problem("last-good") is None and baseline_problem("release") is None
    assert baseline_problem("release:v*") is None and baseline_problem("release:") and baseline_problem("best")
    head = tmp_path / "bench_x.json"
    head.write_text(json.dumps({}))
    assert main(["compare", "--history", "--baseline", "best", str(head)]) == 2
    assert capsys.readouterr().err == (
        "gpuverify compare: --baseline best: not a baseline. Fix: last-good (the newest "
        "ancestors of the head with PASS runs), release (the newest release tag below "
        "the head) or release:GLOB (e.g. release:'v*')\n"
    )
    assert main(["compare", "--baseline", "release", str(head), str(head)]) == 2
    assert "--baseline picks the base from the history store. Fix: add --history" in capsys.readouterr().err


def test_a_commit_the_checkout_lacks_is_counted_not_plotted(lab, tmp_path):
    """The newest run is of a commit never fetched here: main's other commits are still drawn in order."""
    path = tmp_path / "h.db"
    with closing(connect(path)) as conn:
        for n, name in enumerate(MAIN):
            insert(conn, stored(lab.sha[name], n, [level(name)] * 3))
        insert(conn, stored("f" * 40, 99, [30.0] * 3))
    kept, order = commit_order(stored_runs(path), "main", lab.repo)
    assert order.line is not None and len(kept) == 20
    assert order.notes == (f"1 run(s) of 1 commit(s) not on main's first-parent history in {lab.repo}: not plotted",)


def test_without_git_history_says_so_and_compare_refuses(lab, store, tmp_path, monkeypatch, capsys):
    no_git = tmp_path / "bin"
    no_git.mkdir()
    monkeypatch.setenv("PATH", str(no_git))  # a host without git installed
    assert main(["history", "show", "t", "--store", str(store), "--ref", "main", "--repo", str(lab.repo)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == (
        "(commits in the order they first ran, not by the commit graph (git is not installed "
        "here: history cannot read the commit graph); step ranges are not graph-checked. "
        "Fix: run in the code's git checkout, or name it with --repo PATH)"
    )
    assert "REGRESSED after" in out and "(no commit range: ordered by run time" in out
    compare = compare_store(lab, tmp_path, MAIN)
    with pytest.raises(
        Refused, match=r"^no git checkout here has the head's commit \w{12} \(git is not installed here"
    ):
        compared(lab, compare, head_file(lab, tmp_path, "c10", BEFORE))


def test_a_head_of_no_commit_is_refused(lab, tmp_path):
    store = compare_store(lab, tmp_path, MAIN)
    art, path = head_file(lab, tmp_path, "c10", BEFORE)
    art.repos[0].sha = None
    with pytest.raises(
        Refused, match="^the head names no commit: its base is taken from its commit's ancestors. Fix: "
    ):
        compared(lab, store, (art, path))


def test_a_pr_forked_before_mains_regression_is_compared_with_its_fork_point(lab, tmp_path):
    """side forks from main at c8; main regresses at c11 (12 us) after it. The PR's head s3 against
    --ref main takes c8 (its fork point, by the graph) first, never main's newer, slower commits: an
    unchanged PR is not called IMPROVED, and the PR's own regression is not hidden by main's."""
    store = compare_store(lab, tmp_path, [*MAIN, "s1", "s2", "s3"])
    unchanged = compared(lab, store, head_file(lab, tmp_path, "s3", BEFORE), last=1)
    assert unchanged.commits == {"base": lab.sha["c8"], "head": lab.sha["s3"]}
    assert unchanged.pairs[0].call == "SAME" and len(unchanged.pairs[0].base) == 5
    doc = json.loads(render.as_json(unchanged))
    assert doc["commits"]["base"] == lab.sha["c8"] and doc["artifacts"]["base"] == str(store)
    slower = compared(lab, store, head_file(lab, tmp_path, "s3", AFTER), last=1)
    assert slower.pairs[0].call == "REGRESSED"
