"""The history store on real SQLite files, filled by real sessions (a bench harness on nine commits of a
sandbox repo, a 20% slowdown planted at the sixth): adding, once only, a tampered artifact refused, two
processes writing at once, migrations, export and import, compare against history, the step found, and
the report's trend plot rendered in headless Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from screenshots import png_pixels, screenshot

from pytest_gpuverify.cli.main import main
from pytest_gpuverify.history.db import SCHEMA_VERSION, StoreError, connect
from pytest_gpuverify.history.series import commit_order, target_histories
from pytest_gpuverify.history.steps import find_steps
from pytest_gpuverify.history.store import count, runs

# One round a line per shape, five rounds a run; TFLOPS (higher is better) inverse to the time.
HARNESS = """print("[checkAllclose atol=0.01 rtol=0.01 passed~]")
print("    M      N      K   us_median    TFLOPS")
for rnd in range(5):
    for m, scale in ((1, 1.0), (128, 4.0)):
        us = {us} * scale * (1 + 0.002 * rnd)
        print(f"{{m:4d}}   1280   8192   {{us:9.3f}}   {{1000.0 / us:8.3f}}")
"""
BEFORE, AFTER, STEP_AT = 10.0, 12.0, 5  # commits 0..4 run at 10 us, 5..8 at 12 us
COMMITS = 9
CLI = [sys.executable, "-m", "pytest_gpuverify.cli.main"]


def jitter(i: int) -> float:
    return 1 + 0.003 * ((i * 7) % 5 - 2)  # commit to commit, within 0.6%


@pytest.fixture(scope="module")
def lab(tmp_path_factory, docker_client) -> dict:
    """Nine commits, one session each (ticket C0..C8) that adds its artifact to the store at its end
    (--gpu-history); then a tenth commit at 14.4 us (ticket HEAD), added to another store only."""
    from kernel_repos import commit
    from sandboxes import make_sandbox

    root = tmp_path_factory.mktemp("history")
    store = root / "history.db"
    with make_sandbox(root / "host", docker_client) as box:
        (box.repo / "gpuverify.toml").write_text(
            '[[targets]]\nname = "steady"\nkind = "bench"\ncommand = "python3 bench/steady.py"\n'
        )
        shas = []
        for i in range(COMMITS + 1):
            us = (BEFORE if i < STEP_AT else AFTER) * jitter(i) if i < COMMITS else 14.4
            (box.repo / "bench" / "steady.py").write_text(HARNESS.format(us=us))
            commit(box.repo, f"steady at {us:.3f} us")
            shas.append(
                subprocess.run(
                    ["git", "-C", str(box.repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
                ).stdout.strip()
            )
            ticket = f"C{i}" if i < COMMITS else "HEAD"
            extra = ("--gpu-history", str(store)) if i < COMMITS else ()
            if i == COMMITS:  # its own store, under a ref named for it (a CI job on a detached checkout); five
                # processes, so that compare has five runs of the head (a run's own rounds are one process)
                extra = (
                    "--gpu-history",
                    str(root / "release.db"),
                    "--gpu-history-ref",
                    "release-1",
                    "--gpu-repeats",
                    "5",
                )
            proc = box.pytest("gpuverify.toml", *extra, ticket=ticket)
            out = proc.stdout.decode()
            assert proc.returncode == 0, out[-3000:]
            if i < COMMITS:
                assert f"gpuverify: history {store}: 1 artifact(s) added, 0 already stored, 0 refused" in out, out[
                    -2000:
                ]
        yield {
            "store": store,
            "tickets": box.tickets,
            "shas": shas,
            "root": root,
            "box": box,
            "head": box.tickets / "HEAD" / "bench_steady.json",
        }


def artifacts(lab) -> list[Path]:
    return [lab["tickets"] / f"C{i}" / "bench_steady.json" for i in range(COMMITS)]


@pytest.mark.docker
def test_each_session_adds_its_artifact_with_commit_and_ref(lab):
    with closing(connect(lab["store"])) as conn:
        stored = runs(conn, target="steady")
    assert [r.sha for r in stored] == lab["shas"][:COMMITS]
    assert {r.ref for r in stored} == {"main"} and {r.verdict for r in stored} == {"PASS"}
    first = stored[0].rows[0]
    # the harness's five rounds are one process: one value, their median (history counts runs as compare does)
    assert (first.shape, first.metric, len(first.values)) == ("M=1, N=1280, K=8192", "us", 1)
    assert first.median == pytest.approx(BEFORE * jitter(0) * 1.004, abs=0.002)
    assert stored[0].facts["gpu_arch"] == "gfx942" and stored[0].facts["target"] == "steady (bench)"
    with closing(connect(lab["root"] / "release.db")) as conn:
        (head,) = runs(conn)
    assert (head.sha, head.ref, head.artifact_path) == (lab["shas"][COMMITS], "release-1", str(lab["head"]))


@pytest.mark.docker
def test_the_planted_step_is_found_at_its_commit(lab, capsys):
    with closing(connect(lab["store"])) as conn:  # the order of main in the checkout the artifacts name
        kept, order = commit_order(runs(conn, target="steady"), "main")
        (history,) = target_histories(kept, order=order)
    shas = lab["shas"]
    assert order.line is not None and order.notes == () and [p.sha for p in history.rows[0].points] == shas[:COMMITS]
    for row in history.rows:  # both shapes, time and TFLOPS: one step each, at the sixth commit
        (step,) = row.steps
        assert step.index == STEP_AT and row.points[STEP_AT].sha == shas[STEP_AT]
        assert step.call == ("REGRESSED"), (row.label(), step)
        assert row.step_range(step) == f"{shas[STEP_AT - 1][:12]}..{shas[STEP_AT][:12]}"
    capsys.readouterr()
    assert main(["history", "show", "steady", "--store", str(lab["store"]), "--ref", "main"]) == 0
    out = capsys.readouterr().out
    assert out.count(f"REGRESSED {shas[STEP_AT - 1][:12]}..{shas[STEP_AT][:12]}") == 4, out
    assert out.startswith("steady: 9 PASS run(s) on main; gpu_model AMD Instinct MI300X, gpu_arch gfx942")


def test_step_rule_on_plain_series():
    flat = [10.0, 10.02, 9.98, 10.01, 9.99, 10.03, 9.97, 10.0, 10.02, 9.99]
    assert find_steps(flat, "lower") == []
    up_down = flat[:5] + [v * 1.2 for v in flat[5:10]] + flat[:5]
    assert [(s.index, s.call) for s in find_steps(up_down, "lower")] == [(5, "REGRESSED"), (10, "IMPROVED")]
    assert [(s.index, s.call) for s in find_steps(up_down, "higher")] == [(5, "IMPROVED"), (10, "REGRESSED")]
    late = flat[:6] + [12.0, 12.1, 11.9]  # three commits after: fewer than the rule's four, no call yet
    assert find_steps(late, "lower") == []
    small = flat[:5] + [v * 1.03 for v in flat[:5]]  # 3%: within compare's factor 1.05
    assert find_steps(small, "lower") == []
    assert find_steps(up_down, None) == []  # direction unknown: never called


@pytest.mark.docker
def test_the_same_artifact_twice_is_added_once(lab, capsys):
    capsys.readouterr()
    assert (
        main(["history", "add", str(lab["tickets"] / "C0"), str(artifacts(lab)[1]), "--store", str(lab["store"])]) == 0
    )
    out = capsys.readouterr().out
    assert out.count(": already stored") == 2 and "0 added, 2 already stored, 0 refused" in out
    with closing(connect(lab["store"])) as conn:
        assert count(conn) == COMMITS


@pytest.mark.docker
def test_a_tampered_artifact_is_refused(lab, capsys, tmp_path):
    here = tmp_path / "C3"  # its ticket's folder name: only the edit fails the check
    shutil.copytree(lab["tickets"] / "C3", here)
    copy = here / "bench_steady.json"
    data = json.loads(copy.read_text())
    data["perf"][0]["us_median"] = 5.0
    copy.write_text(json.dumps(data, indent=2))
    store = tmp_path / "h.db"
    capsys.readouterr()
    assert main(["history", "add", str(here), "--store", str(store)]) == 1
    out = capsys.readouterr().out
    assert f"{copy}: refused: fails gpuverify check" in out and "us_median is 5.0, the raw output gives" in out
    assert "0 added, 0 already stored, 1 refused" in out
    with closing(connect(store)) as conn:
        assert count(conn) == 0


@pytest.mark.docker
def test_two_processes_adding_at_once_lose_nothing(lab, tmp_path):
    """Both add all nine artifacts at once: nine runs stored, each added by exactly one of them."""
    store = tmp_path / "both.db"
    procs = [
        subprocess.Popen(
            [*CLI, "history", "add", *map(str, artifacts(lab)), "--store", str(store)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    added = [o.count(": added") for o, _ in outs]
    assert sum(added) == COMMITS and all(o.count(": already stored") + a == COMMITS for (o, _), a in zip(outs, added))
    with closing(connect(store)) as conn:
        assert count(conn) == COMMITS


@pytest.mark.docker
def test_two_processes_importing_at_once_lose_nothing(tmp_path):
    """Two imports of 60 distinct runs each (3 files of 20: a transaction each, so the two interleave), at
    once, into one file: 120 runs, none lost. Each line's artifact is real and verified on import, as
    ``history add`` verifies it (fabricated lines were imported unverified before imports verified)."""
    from store_artifacts import never_ran

    source = tmp_path / "source.db"
    arts = [never_ran(tmp_path / "runs", n) for n in range(120)]
    subprocess.run([*CLI, "history", "add", *map(str, arts), "--store", str(source)], check=True, capture_output=True)
    lines = subprocess.run(
        [*CLI, "history", "export", "--store", str(source)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert len(lines) == 120
    parts: list[list[str]] = [[], []]
    for k in range(2):
        for f in range(3):
            part = tmp_path / f"part{k}-{f}.jsonl"
            start = k * 60 + f * 20
            part.write_text("\n".join(lines[start : start + 20]) + "\n")
            parts[k].append(str(part))
    store = tmp_path / "imported.db"
    procs = [
        subprocess.Popen(
            [*CLI, "history", "import", *parts[k], "--store", str(store)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all(o.count(": 20 added, 0 already stored, 0 line(s) skipped") == 3 for o, _ in outs), outs
    with closing(connect(store)) as conn:
        assert count(conn) == 120
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


@pytest.mark.docker
def test_export_and_import_move_the_history(lab, tmp_path, capsys):
    out = tmp_path / "history.jsonl"
    assert main(["history", "export", "--store", str(lab["store"]), "-o", str(out)]) == 0
    moved = tmp_path / "moved.db"
    assert main(["history", "import", str(out), "--store", str(moved)]) == 0
    with closing(connect(lab["store"])) as a, closing(connect(moved)) as b:
        assert runs(a) == runs(b) and len(runs(b)) == COMMITS
    broken = tmp_path / "broken.jsonl"
    good = out.read_text().splitlines()
    broken.write_text("\n".join([good[0], '{"topic": "x"}', "not json"]) + "\n")
    capsys.readouterr()
    assert main(["history", "import", str(broken), "--store", str(tmp_path / "other.db")]) == 1
    got = capsys.readouterr()
    assert f"{broken} line 2: not a history record (artifact_sha256: Field required); skipped" in got.err
    assert f"{broken} line 3: not a history record" in got.err
    assert f"{broken}: 1 added, 0 already stored, 2 line(s) skipped" in got.out


@pytest.mark.docker
def test_compare_against_the_last_good_runs(lab, capsys):
    capsys.readouterr()
    store = str(lab["store"])
    code = main(["compare", "--history", "--store", store, "--ref", "main", "--last", "4", "--json", str(lab["head"])])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    shas = lab["shas"]
    base_note = doc["notes"][0]
    assert base_note == (
        f"base: the last 4 commit(s) with PASS runs on main below the head {shas[COMMITS][:12]} (each "
        f"an ancestor of it), 4 run(s) in {store}: " + ", ".join(f"{s[:12]} (1 run(s))" for s in reversed(shas[5:9]))
    )
    for pair in doc["pairs"]:  # 14.4 us against the runs at 12 us: 20% slower, by time and by TFLOPS
        # the base: one value per stored run (each session one process), four runs
        assert (pair["call"], len(pair["base"]), len(pair["head"])) == ("REGRESSED", 4, 5), pair
        assert pair["ratio"] == pytest.approx(1.2 if pair["metric"] == "us" else 1 / 1.2, rel=0.01)
    assert main(["compare", "--history", "--store", store, "--ref", "release", str(lab["head"])]) == 2
    assert (
        "gpuverify compare: refused: release: not a branch, tag or commit in the checkout at "
        in capsys.readouterr().err
    )
    assert main(["compare", "--history", "--store", store, str(lab["head"]), str(lab["head"])]) == 2


@pytest.mark.docker
def test_compare_of_an_old_head_takes_its_ancestors_never_later_commits(lab, capsys):
    """The head is C4's artifact (10 us); the store also holds C5..C8 (12 us), newer: by time they would be
    its base and call it IMPROVED 17%. Its base is C3..C0, its ancestors: nothing called apart."""
    capsys.readouterr()
    store, shas = str(lab["store"]), lab["shas"]
    code = main(
        ["compare", "--history", "--store", store, "--ref", "main", "--last", "4", "--json", str(artifacts(lab)[4])]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["notes"][0].endswith(", ".join(f"{s[:12]} (1 run(s))" for s in reversed(shas[:4])))
    assert not any(s[:12] in doc["notes"][0] for s in shas[5:])
    assert [p["call"] for p in doc["pairs"]] and not any(p["call"] in ("IMPROVED", "REGRESSED") for p in doc["pairs"])
    assert main(["compare", "--history", "--store", store, "--baseline", "release", str(artifacts(lab)[4])]) == 2
    assert "refused: no release tag is reachable from" in capsys.readouterr().err


def test_a_store_of_schema_1_is_migrated(tmp_path):
    path = tmp_path / "old.db"
    with closing(connect(path, upto=1)) as conn:
        conn.exec_driver_sql(
            "INSERT INTO runs (artifact_sha256, artifact_path, target, topic, facts, ts, verdict, watch, added)"
            " VALUES (?, 'a.json', 'steady', 'steady', '{}', '2026-01-01T00:00:00Z', 'PASS', '[]', 'now')",
            ("a" * 64,),
        )
        conn.exec_driver_sql(
            "INSERT INTO perf (run_id, shape, name, metric, direction, run_values, median, min, max)"
            " VALUES (1, 's', 'n', 'us', 'lower', '[1.0, 2.0]', 1.5, 1.0, 2.0)"
        )
        assert [r[1] for r in conn.exec_driver_sql("PRAGMA table_info(runs)")].count("ref") == 0
        conn.commit()
    with closing(connect(path)) as conn:
        assert conn.exec_driver_sql("PRAGMA user_version").scalar() == SCHEMA_VERSION == 5
        (run,) = runs(conn)
        assert (run.ref, run.rows[0].values) == (None, [1.0, 2.0])
        conn.exec_driver_sql("PRAGMA user_version = 99")
        conn.commit()
    with pytest.raises(StoreError, match="history schema 99 is newer than this gpuverify's"):
        connect(path)


DATA = Path(__file__).resolve().parents[1] / "data" / "history"


@pytest.mark.parametrize("name, version", [("store_schema1.db", 1), ("store_schema2.db", 2)])
def test_a_store_written_before_alembic_upgrades_in_place(tmp_path, capsys, name, version):
    """A store written by the SQLite-only store (tests/data/history/README.md) is brought to the newest
    schema when opened, its runs and their rows' order kept; then Alembic knows its revision."""
    import sqlite3

    store = tmp_path / name
    shutil.copy(DATA / name, store)
    with closing(sqlite3.connect(store)) as old:
        assert old.execute("PRAGMA user_version").fetchone()[0] == version
        assert not old.execute("SELECT count(*) FROM sqlite_master WHERE name = 'alembic_version'").fetchone()[0]
    assert main(["history", "export", "--store", str(store)]) == 0  # a reader's first open migrates it
    exported = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    with closing(connect(store)) as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == f"{SCHEMA_VERSION:04d}"
        assert conn.exec_driver_sql("PRAGMA user_version").scalar() == SCHEMA_VERSION
        stored = runs(conn)
    if version == 1:
        assert [(r["target"], r["ref"]) for r in exported] == [("steady", None)]
        assert [row.shape for row in stored[0].rows] == ["s2", "s1"]  # the order they were stored in
    else:
        assert [r["artifact_sha256"][-1] for r in exported] == ["0", "1", "2"] and {r["ref"] for r in exported} == {
            "main"
        }
        assert [[row.shape for row in r.rows] for r in stored] == [["M=1", "M=128", "M=4"]] * 3
        assert stored[2].rows[1].values == [12.0 * 128, 12.0 * 128 * 1.01]


def test_a_store_that_cannot_be_used_is_one_line(tmp_path, capsys):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all\n" * 100)
    assert main(["history", "show", "x", "--store", str(junk)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpuverify history show: {junk}: not a usable history store (") and err.count("\n") == 1
    assert main(["history", "show", "x", "--store", str(tmp_path)]) == 2
    assert "is a folder. Fix: name a file" in capsys.readouterr().err
    assert main(["history", "add", str(tmp_path / "none"), "--store", str(tmp_path / "h.db")]) == 2
    assert "no artifact (bench_*.json) there" in capsys.readouterr().err
    missing = tmp_path / "none.db"
    assert main(["history", "export", "--store", str(missing)]) == 2
    assert f"{missing}: no history store there. Fix: name it with --store" in capsys.readouterr().err
    assert not missing.exists()  # reading never makes one
    assert main(["history", "import", str(junk), "--store", str(tmp_path / "h.db")]) == 1
    err = capsys.readouterr().err
    assert err.count(": not a history record") == 5 and f"{junk}: " in err and "more line(s) skipped" in err


@pytest.mark.docker
def test_report_trend_plot_renders_in_chromium(lab, tmp_path):
    page = tmp_path / "report.html"
    assert (
        main(
            [
                "report",
                str(lab["tickets"] / "C8"),
                "-o",
                str(page),
                "--history",
                "--store",
                str(lab["store"]),
                "--ref",
                "main",
            ]
        )
        == 0
    )
    html = page.read_text()
    shas = lab["shas"]
    nowhere = tmp_path / "none.db"
    assert (
        main(
            [
                "report",
                str(lab["tickets"] / "C8"),
                "-o",
                str(tmp_path / "other.html"),
                "--history",
                "--store",
                str(nowhere),
            ]
        )
        == 1
    )  # the page is still written, the missing store named on it
    assert f"history not shown: {nowhere}: no history store there" in (tmp_path / "other.html").read_text()
    assert html.count(f"{shas[STEP_AT - 1][:12]}..{shas[STEP_AT][:12]}") == 8  # 4 rows: listed and plotted
    shot = tmp_path / "shot.png"
    screenshot(page, shot, (1100, 1400))
    pixels = png_pixels(shot)
    near = lambda rgb, want: all(abs(x - y) < 40 for x, y in zip(rgb, want))  # noqa: E731
    trend = sum(near(p, (0x1F, 0x77, 0xB4)) for p in pixels)  # the trend's points and line
    step = sum(near(p, (0xB0, 0x00, 0x20)) for p in pixels)  # the regression's dashed line and label
    assert trend > 200 and step > 200, (trend, step)


@pytest.mark.docker
def test_a_teams_store_in_a_shared_folder_takes_two_users(lab, second_user, world_base):
    """The store made by one user in a setgid group folder is group-writable whatever its umask; another
    Unix user of the group adds to it (their -wal and -shm files too)."""
    import os

    team = world_base / "team-history"
    team.mkdir(exist_ok=True)
    os.chown(team, 0, second_user.gid)
    os.chmod(team, 0o2775)
    records = team / "runs.jsonl"
    assert main(["history", "export", "--store", str(lab["store"]), "-o", str(records)]) == 0
    lines = records.read_text().splitlines()
    records.write_text("\n".join(lines[:4]) + "\n")
    later = team / "later.jsonl"
    later.write_text("\n".join(lines[4:]) + "\n")
    os.chmod(records, 0o644)
    os.chmod(later, 0o644)
    for line in lines:  # the runs' ticket folders beside the export: import verifies each run's artifact
        ticket = Path(json.loads(line)["artifact_path"]).parent
        shutil.copytree(ticket, team / ticket.name, dirs_exist_ok=True)
        for path in [team / ticket.name, *(team / ticket.name).rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
    store = team / "history.db"
    old = os.umask(0o022)
    try:
        assert main(["history", "import", str(records), "--store", str(store)]) == 0
    finally:
        os.umask(old)
    assert (os.stat(store).st_mode & 0o777, os.stat(store).st_gid) == (0o664, second_user.gid)
    proc = second_user.run(
        ["python3", "-m", "pytest_gpuverify.cli.main", "history", "import", str(later), "--store", str(store)]
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert f"{later}: {COMMITS - 4} added, 0 already stored" in proc.stdout.decode()
    with closing(connect(store)) as conn:
        assert count(conn) == COMMITS


def test_dirty_and_failed_runs_are_no_result_of_their_commit(tmp_path):
    from pytest_gpuverify.history.records import StoredRow, StoredRun
    from pytest_gpuverify.history.store import insert

    def stored(n: int, us: float, verdict: str = "PASS", dirty: bool = False) -> StoredRun:
        row = StoredRow(shape="M=1", name="t", metric="us", direction="lower", values=[us], median=us, min=us, max=us)
        return StoredRun(
            artifact_sha256=f"{n:064x}",
            artifact_path=f"C{n}/bench_t.json",
            target="t",
            topic="t",
            facts={"target": "t (bench)"},
            sha=f"{n:040x}",
            ref="main",
            dirty=dirty,
            ts=f"2026-01-01T00:00:{n:02d}Z",
            verdict=verdict,
            rows=[row],
        )

    with closing(connect(tmp_path / "h.db")) as conn:
        for n in range(8):
            insert(conn, stored(n, 10.0 + 0.01 * (n % 3)))
        insert(conn, stored(20, 30.0, dirty=True))  # newer, and far off: would be a step if it counted
        insert(conn, stored(21, 31.0, verdict="FAIL"))
        (history,) = target_histories(runs(conn, target="t"))
    assert history.runs == 8 and [len(r.points) for r in history.rows] == [8] and history.rows[0].steps == []


# --- a store that fails clearly: real files damaged, locked, read-only and full ---


def stored_run(n: int, us: float = 10.0, target: str = "t"):
    from pytest_gpuverify.history.records import StoredRow, StoredRun

    row = StoredRow(shape="M=1", name="t", metric="us", direction="lower", values=[us], median=us, min=us, max=us)
    return StoredRun(
        artifact_sha256=f"{n:064x}",
        artifact_path=f"C{n}/bench_{target}.json",
        target=target,
        topic=target,
        facts={"target": f"{target} (bench)"},
        sha=f"{n + 1:012x}" + "f" * 28,
        ref="main",
        dirty=False,
        ts=f"2026-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
        verdict="PASS",
        rows=[row],
    )


def filled(path: Path, commits: int, step_at: int = 10**9) -> Path:
    """A store of ``commits`` runs of target t, one a commit, 20% slower from ``step_at`` on."""
    from pytest_gpuverify.history.store import insert_many

    with closing(connect(path)) as conn:
        insert_many(
            conn, [stored_run(n, (12.0 if n >= step_at else 10.0) * (1 + 0.002 * (n % 3))) for n in range(commits)]
        )
    return path


def exported(tmp_path: Path, first: int, count: int) -> Path:
    from store_artifacts import exported_runs

    return exported_runs(tmp_path, first, count)


def ticket_of_t(tmp_path: Path) -> Path:
    """A ticket folder with one artifact of target t: what ``report`` is given; its history is the store's."""
    from pytest_gpuverify.records.artifact import Artifact, RunRecord, TargetRecord

    folder = tmp_path / "T"
    folder.mkdir(exist_ok=True)
    (folder / "bench_t.json").write_text(
        Artifact(
            topic="t",
            ts="2026-02-01T00:00:00Z",
            verdict="PASS",
            run=RunRecord(ran=True),
            target=TargetRecord(name="t", kind="bench"),
        ).model_dump_json()
    )
    return folder


def one_line(capsys, command: str) -> str:
    err = capsys.readouterr().err
    assert err.startswith(f"gpuverify {command}: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_a_damaged_store_is_one_line_for_every_command(tmp_path, capsys):
    garbage = filled(tmp_path / "garbage.db", 300)
    with open(garbage, "r+b") as fh:  # the header's page survives; the pages of the runs do not
        fh.seek(4096)
        fh.write(b"\xde\xad" * 40000)
    truncated = filled(tmp_path / "truncated.db", 300)
    with open(truncated, "r+b") as fh:
        fh.truncate(truncated.stat().st_size // 3)
    headless = filled(tmp_path / "headless.db", 3)
    with open(headless, "r+b") as fh:
        fh.write(b"not a database at all\n" * 10)
    for store in (garbage, truncated, headless):
        capsys.readouterr()
        assert main(["history", "show", "t", "--store", str(store)]) == 2
        err = one_line(capsys, "history show")
        assert (
            f"{store}: not a usable history store (" in err
            and "the file is damaged. Fix: restore it from an export" in err
        )
        assert main(["history", "export", "--store", str(store)]) == 2
        one_line(capsys, "history export")
        assert main(["history", "import", str(exported(tmp_path, 1000, 5)), "--store", str(store)]) == 2
        assert "the file is damaged" in one_line(capsys, "history import")


def test_a_newer_schema_is_one_line(tmp_path, capsys):
    store = filled(tmp_path / "h.db", 3)
    with closing(connect(store)) as conn:
        conn.exec_driver_sql("PRAGMA user_version = 99")
        conn.commit()
    for argv, command in (
        (["history", "show", "t"], "history show"),
        (["history", "export"], "history export"),
        (["history", "import", str(exported(tmp_path, 10, 2))], "history import"),
    ):
        assert main([*argv, "--store", str(store)]) == 2
        assert (
            f"{store}: history schema 99 is newer than this gpuverify's ({SCHEMA_VERSION}). Fix: upgrade"
            in one_line(capsys, command)
        )


HOLDER = """import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE perf SET median = -1")  # not committed: no reader may see it
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
"""


def test_readers_never_wait_for_a_writer_and_a_writer_says_when_it_gave_up(tmp_path, capsys, monkeypatch):
    import time

    from pytest_gpuverify.history import db

    store = filled(tmp_path / "h.db", 12, step_at=6)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(store), "30"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        start = time.monotonic()
        capsys.readouterr()
        assert main(["history", "show", "t", "--store", str(store)]) == 0  # a writer's busy timeout is 60 s
        assert main(["history", "export", "--store", str(store)]) == 0
        assert time.monotonic() - start < 10
        out = capsys.readouterr().out
        assert "REGRESSED" in out and "median -1" not in out and '"median":-1' not in out.replace(" ", "")
        monkeypatch.setattr(db, "BUSY_S", 0.5)
        assert main(["history", "import", str(exported(tmp_path, 100, 3)), "--store", str(store)]) == 2
        err = one_line(capsys, "history import")
        assert f"{store}: locked for over 0.5 s (database is locked): another process holds its write lock" in err
    finally:
        holder.kill()
        holder.wait()
    with closing(connect(store)) as conn:
        assert count(conn) == 12  # nothing of the import half-stored


def mounted(args: list[str]) -> None:
    proc = subprocess.run(["mount", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"mount {' '.join(args)} is not allowed here: {proc.stderr.strip()}")


@pytest.mark.parametrize("what", ["folder", "file"])
def test_a_read_only_store_is_read_and_its_writer_says_it_cannot_write(tmp_path, capsys, what):
    """A read-only bind mount (root ignores file modes): of the store's folder, or of the store's file alone."""
    folder = tmp_path / "team"
    folder.mkdir()
    store = filled(folder / "h.db", 12, step_at=6)
    shared = [Path(f"{store}-wal"), Path(f"{store}-shm")]
    assert not any(p.exists() for p in shared)  # the last writer has gone: no -wal, no -shm to read beside it
    target = folder if what == "folder" else store
    mounted(["--bind", str(target), str(target)])
    try:
        mounted(["-o", "remount,bind,ro", str(target)])
        capsys.readouterr()
        assert main(["history", "show", "t", "--store", str(store)]) == 0
        assert capsys.readouterr().out.count("REGRESSED") == 1
        assert main(["history", "import", str(exported(tmp_path, 100, 3)), "--store", str(store)]) == 2
        err = one_line(capsys, "history import")
        assert f"{store}: cannot write the store (" in err and "Fix: get write access to the file and its folder" in err
        page = tmp_path / "page.html"
        assert main(["report", str(ticket_of_t(tmp_path)), "-o", str(page), "--history", "--store", str(store)]) == 0
        assert "REGRESSED" in page.read_text() and "history not shown" not in page.read_text()
    finally:
        subprocess.run(["umount", str(target)], check=True)
    with closing(connect(store)) as conn:
        assert count(conn) == 12


def test_a_full_disk_is_one_line_and_loses_nothing_stored(tmp_path, capsys):
    disk = tmp_path / "small"
    disk.mkdir()
    mounted(["-t", "tmpfs", "-o", "size=192k", "tmpfs", str(disk)])
    try:
        store = filled(disk / "h.db", 5)
        big = exported(tmp_path, 100, 2000)  # far more than 192 KiB of runs
        capsys.readouterr()
        assert main(["history", "import", str(big), "--store", str(store)]) == 2
        err = one_line(capsys, "history import")
        assert f"{store}: the disk is full (" in err and f"Fix: free space on its file system (df {disk})" in err
        with closing(connect(store)) as conn:
            assert 5 <= count(conn) < 2005 and conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
    finally:
        subprocess.run(["umount", str(disk)], check=True)


@pytest.mark.docker
def test_a_pass_session_keeps_its_exit_when_the_store_is_damaged(lab, tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all\n" * 100)
    proc = lab["box"].pytest("gpuverify.toml", "--gpu-history", str(junk), ticket="DAMAGED")
    out = proc.stdout.decode()
    assert proc.returncode == 0, out[-3000:]
    assert f"gpuverify: history not kept: {junk}: not a usable history store (" in out and "Traceback" not in out
    assert (lab["tickets"] / "DAMAGED" / "bench_steady.json").is_file()  # the artifact is written all the same


# --- scale: the newest commits shown, every step found, the page small ---


def test_show_prints_the_newest_commits_and_every_step(tmp_path, capsys):
    store = filled(tmp_path / "h.db", 60, step_at=20)
    capsys.readouterr()
    assert main(["history", "show", "t", "--store", str(store)]) == 0
    out = capsys.readouterr().out.splitlines()
    commits = [line for line in out if " median " in line and "REGRESSED" not in line]
    assert len(commits) == 20 and commits[-1].startswith(f"    {60:012x}")
    assert "    ... 40 older commit(s) not shown (--all shows every commit)" in out
    # commit 19 (sha 20) before, commit 20 after: older than shown; made-up commits no checkout has, so in
    # the order they ran and without a commit range
    step = f"    REGRESSED after {20:012x}, at {21:012x} (no commit range: ordered by run time, "
    assert sum(line.startswith(step) and line.endswith("(median 10.02 to 12.02)") for line in out) == 1, out
    assert main(["history", "show", "t", "--store", str(store), "--all"]) == 0
    out = capsys.readouterr().out
    assert out.count(" median ") == 60 and f"{21:012x}  " in out and "not shown" not in out
    assert main(["history", "show", "t", "--store", str(store), "--newest", "3"]) == 0
    assert capsys.readouterr().out.count(" runs 1 ") == 3


def test_show_reads_only_the_commits_a_fit_looks_at(tmp_path, capsys):
    from pytest_gpuverify.history.steps import MOST_POINTS

    store = filled(tmp_path / "h.db", MOST_POINTS + 50, step_at=MOST_POINTS + 20)
    with closing(connect(store)) as conn:
        found = runs(conn, target="t", watch=False, newest_commits=MOST_POINTS)
        (history,) = target_histories(found)
    assert len(found) == history.runs == MOST_POINTS + 50  # every run counted
    assert [len(r.rows) for r in found].count(1) == MOST_POINTS and len(history.rows[0].points) == MOST_POINTS
    assert [(s.index, s.call) for s in history.rows[0].steps] == [(MOST_POINTS - 30, "REGRESSED")]
    capsys.readouterr()
    assert main(["history", "show", "t", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "older commits not shown" in out and out.count(" median ") == 20 and out.count("REGRESSED") == 1


def test_the_report_draws_at_most_its_newest_points_per_row(tmp_path):
    from pytest_gpuverify.reporting.history_section import MAX_POINTS

    store = filled(tmp_path / "h.db", 400, step_at=380)
    page = tmp_path / "page.html"
    assert main(["report", str(ticket_of_t(tmp_path)), "-o", str(page), "--history", "--store", str(store)]) == 0
    html = page.read_text()
    section = html[html.index("<h2 id='history'>") : html.index("<h2>Targets</h2>")]
    assert (
        section.count("<circle") == MAX_POINTS
        and section.count(f"after {380:012x}, at {381:012x} (no commit range") == 2
    )
