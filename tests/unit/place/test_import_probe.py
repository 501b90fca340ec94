"""The run's own record of its imports: the probe in real Python processes, and the rule that settles
it against the prediction (the engine's and `gpuverify check`'s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pytest_gpuverify.place.import_probe import (
    install_command,
    parse_records,
    probe_env,
    read_back_command,
    records_folder,
)
from pytest_gpuverify.place.packages import NOT_RECORDED, UnderTest, origin_records, settle_imports
from pytest_gpuverify.records.artifact import ImportOrigin

SHOW = "import json, sys; print(json.dumps(sys.path)); print(repr(sys.modules.get('sitecustomize')))"


def probed(tmp_path: Path, names, pythonpath: str = ""):
    probe = str(tmp_path / "import-probe-x")
    subprocess.run(install_command(probe), check=True)
    records = records_folder(str(tmp_path / "scratch"), "run-1")
    return records, {**os.environ, **probe_env(probe, records, names, pythonpath)}


def read_back(records: str):
    return parse_records(subprocess.run(read_back_command(records), capture_output=True, text=True, check=True).stdout)


def test_the_probe_records_each_package_as_imported_and_changes_nothing_the_command_sees(tmp_path):
    pkg = tmp_path / "checkout" / "src" / "kernelkit"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    plain_env = {**os.environ, "PYTHONPATH": str(pkg.parent)}
    records, env = probed(tmp_path, ["kernelkit", "never_imported"], str(pkg.parent))
    code = f"import kernelkit; {SHOW}"
    plain = subprocess.run([sys.executable, "-c", code], env=plain_env, capture_output=True, text=True)
    seen = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert (seen.returncode, seen.stdout, seen.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    observed = read_back(records)
    assert observed.processes == 1 and observed.origins == {"kernelkit": [str(pkg / "__init__.py")]}
    assert not Path(records).exists(), "the records are removed once read"


def test_a_sitecustomize_the_probe_shadows_still_runs(tmp_path):
    own = tmp_path / "site-own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import sys\nsys.stderr.write('own sitecustomize\\n')\n")
    records, env = probed(tmp_path, ["json"], "")
    env["PYTHONPATH"] = f"{env['PYTHONPATH']}:{own}"  # after the probe: found only through its chaining
    done = subprocess.run([sys.executable, "-c", "import json"], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "own sitecustomize\n"
    assert "json" in read_back(records).origins


def test_children_record_too_and_an_isolated_python_records_nothing(tmp_path):
    records, env = probed(tmp_path, ["json"])
    child = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import json'], check=True)"
    subprocess.run([sys.executable, "-c", child], env=env, check=True)
    assert read_back(records).processes == 2  # the parent (which imported nothing) and its child
    subprocess.run([sys.executable, "-I", "-c", "import json"], env=env, check=True)
    assert read_back(records).processes == 0


def test_records_that_are_not_ours_are_skipped():
    text = "\n".join(
        [
            json.dumps({"pid": 1, "imported": {"a": "/w/a/__init__.py"}}),
            "not json",
            json.dumps(["a list"]),
            json.dumps({"pid": 2, "imported": {"a": "/s/a/__init__.py", "b": None}}),
        ]
    )
    observed = parse_records(text)
    assert observed.processes == 2 and observed.origins == {"a": ["/w/a/__init__.py", "/s/a/__init__.py"]}


def record(**kw) -> ImportOrigin:
    return ImportOrigin(**{"checkout": "/w/src/k/__init__.py", **kw})


def test_the_runs_record_decides_and_names_both_paths():
    inside = record(predicted="/site/k/__init__.py", seen="imported", observed="/w/src/k/__init__.py", processes=1)
    imports, reasons, notes = settle_imports({"k": inside}, "/w", required=True)
    assert imports == {"k": "/w/src/k/__init__.py"} and reasons == []
    assert notes == [
        "k: predicted from /site/k/__init__.py, but the run imported it from /w/src/k/__init__.py: "
        "the run's own record decides"
    ]
    outside = record(predicted="/w/src/k/__init__.py", seen="imported", observed="/site/k/__init__.py", processes=1)
    imports, reasons, _ = settle_imports({"k": outside}, "/w", required=True)
    assert imports == {"k": "/site/k/__init__.py"}
    assert reasons == [
        "k was imported from /site/k/__init__.py, outside the worktree /w/, not from its own "
        "/w/src/k/__init__.py: the run tested another copy"
    ]
    # one process of several took another copy: still another copy tested
    mixed = record(seen="imported", observed="/w/src/k/__init__.py", also_observed=["/site/k/__init__.py"], processes=2)
    assert settle_imports({"k": mixed}, "/w", required=False)[1][0].startswith("k was imported from /site/k/")


def test_not_imported_is_said_and_not_recorded_falls_back_to_the_prediction():
    never = record(predicted="/site/k/__init__.py", seen="not imported", processes=3)
    imports, reasons, notes = settle_imports({"k": never}, "/w", required=True)
    assert imports == {"k": "/site/k/__init__.py"} and reasons == []  # no copy was tested: nothing refused
    assert notes == ["k was not imported by the command (3 Python processes recorded their imports)"]
    unseen = record(predicted="/site/k/__init__.py", why_not_recorded=NOT_RECORDED)
    imports, reasons, _ = settle_imports({"k": unseen}, "/w", required=True)
    assert (
        imports == {"k": "/site/k/__init__.py"}
        and "(predicted; the run did not record its imports: no Python" in reasons[0]
    )
    assert "not from its own /w/src/k/__init__.py" in reasons[0]
    missing = record(predicted=None, why_not_recorded="the command never started")
    assert settle_imports({"k": missing}, "/w", required=True)[1] == [
        "k is not importable with the command's import path, and the run did not record its imports: the command "
        "never started"
    ]
    guessed = settle_imports({"k": missing}, "/w", required=False)
    assert guessed[0] == {} and guessed[1] == [] and "no package was checked" in guessed[2][0]


def test_origin_records_say_why_nothing_was_recorded():
    under = UnderTest(("k",), "declaration", True)
    from pytest_gpuverify.place.import_probe import Observed

    none = origin_records(under, {"k": "/w/k/__init__.py"}, ["/w"], Observed(), None, {"k": "/w/k/__init__.py"})
    assert none["k"].seen == "not recorded" and none["k"].why_not_recorded == NOT_RECORDED
    lost = origin_records(under, {}, [], Observed(problem="read failed"), None, {})
    assert lost["k"].why_not_recorded == "read failed"
    seen = origin_records(under, {}, ["/w"], Observed(processes=2, origins={"k": ["/w/k/__init__.py"]}), None, {})
    assert (seen["k"].seen, seen["k"].observed, seen["k"].processes, seen["k"].predicted_path) == (
        "imported",
        "/w/k/__init__.py",
        2,
        ["/w"],
    )


def test_show_says_whether_the_run_or_the_prediction_named_the_origin(tmp_path):
    from pytest_gpuverify.cli.show import render
    from pytest_gpuverify.records.artifact import Artifact

    art = Artifact(
        topic="t",
        ts="2026-01-01T00:00:00.000Z",
        imports={"k": "/w/k/__init__.py", "j": "/s/j/__init__.py"},
        import_origins={
            "k": record(seen="imported", observed="/w/k/__init__.py"),
            "j": record(predicted="/s/j/__init__.py"),
        },
    )
    text = render(art, tmp_path / "bench_t.json")
    assert "imports    k from /w/k/__init__.py (imported by the run)" in text
    assert "imports    j from /s/j/__init__.py (predicted: the run recorded none)" in text
