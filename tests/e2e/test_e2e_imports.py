"""Where the package under test really came from, end to end: a repo in src layout whose pytest ini puts
``src`` on the import path, with a release copy of the same package installed (pip, for real). The run's
own record of its imports decides, on the host (``--gpu-container none``, the release in a venv's
site-packages) and in a container (the release in a ``pip install --target`` folder on its PYTHONPATH)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from kernel_repos import commit, out

from pytest_gpuverify.cli import demo
from pytest_gpuverify.verify.check import check_artifact

pytestmark = pytest.mark.docker

ADD = "def add(a, b):\n    return [x + y for x, y in zip(a, b)]\n"
TEST = (
    "import pytest\n\nfrom {pkg} import add\n\n\n@pytest.mark.parametrize('n', [128, 1024])\n"
    "def test_add(n):\n    assert add(list(range(n)), list(range(n))) == [2 * i for i in range(n)]\n"
    "    print(f'N={{n}}: max_abs_error=0.0')\n"
)
# name, package, test file, the ini file and its text (with the pytest ``pythonpath`` line, or without)
LAYOUTS = {
    "liger": (
        "Liger-Kernel",
        "liger_kernel",
        "test/transformers/test_add.py",
        "pyproject.toml",
        '[project]\nname = "liger_kernel"\nversion = "0.1"\n[tool.pytest.ini_options]\n{pythonpath}'
        'gpu_pytest_paths = ["test/**/test_*.py"]\n',
        'pythonpath = ["src"]\n',
    ),
    "flaggems": (
        "FlagGems",
        "flag_gems",
        "tests/test_add.py",
        "pytest.ini",
        "[pytest]\n{pythonpath}gpu_pytest_paths = tests/test_*.py\n",
        "pythonpath = src\n",
    ),
}


def release(tmp_path: Path, package: str) -> Path:
    """A release of ``package`` as a wheel (written here: this machine has no build backend offline),
    which pip installs as it installs any."""
    import base64
    import hashlib
    import zipfile

    files = {
        f"{package}/__init__.py": f"# the release\n{ADD}",
        f"{package}-9.9.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {package}\nVersion: 9.9\n",
        f"{package}-9.9.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: a test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},"
        f"{len(text.encode())}"
        for name, text in files.items()
    ]
    files[f"{package}-9.9.dist-info/RECORD"] = "\n".join([*record, f"{package}-9.9.dist-info/RECORD,,"]) + "\n"
    wheel = tmp_path / f"{package}-9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return wheel


def pip_install(python: str, wheel: Path, *args: str) -> None:
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", *args, str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )


def make_repo(sandbox, layout: str, with_pythonpath: bool) -> tuple[Path, str, str]:
    name, package, test, ini, text, line = LAYOUTS[layout]
    repo = sandbox.root / "repos" / name
    (repo / "src" / package).mkdir(parents=True)
    (repo / "src" / package / "__init__.py").write_text(f"# the checkout\n{ADD}")
    (repo / test).parent.mkdir(parents=True)
    (repo / test).write_text(TEST.format(pkg=package))
    (repo / ini).write_text(text.format(pythonpath=line if with_pythonpath else ""))
    if ini != "pyproject.toml":  # the project names the package under test; the ini file is pytest's own
        (repo / "pyproject.toml").write_text(f'[project]\nname = "{package}"\nversion = "0.1"\n')
    subprocess.run(["git", "-C", str(repo), "init", "-q", "-b", "main"], check=True)
    commit(repo, "src layout")
    return repo, package, test


def run(sandbox, tmp_path, layout: str, where: str, with_pythonpath: bool):
    repo, package, test = make_repo(sandbox, layout, with_pythonpath)
    env, extra = {}, []
    if where == "host":
        venv = tmp_path / "venv"  # the release in a real site-packages, the command's python3 that venv's
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
        pip_install(str(venv / "bin" / "python3"), release(tmp_path, package))
        env = {"PATH": f"{venv / 'bin'}:{sandbox.sim_bin}:{os.environ['PATH']}"}
        extra = ["--gpu-container", "none"]
        wt = str(repo.resolve())
        installed = str(next((venv / "lib").glob(f"python3.*/site-packages/{package}/__init__.py")))
    else:
        site = tmp_path / "site"
        pip_install(sys.executable, release(tmp_path, package), "--target", str(site))
        container = f"gv-imp-{uuid.uuid4().hex[:8]}"
        wt = f"/workspace/{repo.name}"
        demo.start_container(
            sandbox.client,
            container,
            sandbox.sim_bin,
            {str(repo): wt, str(site): "/opt/site"},
            env={"PYTHONPATH": "/opt/site"},
        )
        sandbox.extra_containers.append(container)
        demo.install_pytest(sandbox.client, container)
        installed = f"/opt/site/{package}/__init__.py"
    sandbox.rewrite_env(
        repo_rows=[*sandbox.spec.repo_rows, (repo.name, repo, container if where != "host" else sandbox.container, wt)],
        containers=[*sandbox.spec.containers, *([(container, demo.ROOTFS_IMAGE)] if where != "host" else [])],
    )
    proc = subprocess.run(
        [*_session(sandbox), *extra, test],
        cwd=repo,
        capture_output=True,
        timeout=300,
        env={**os.environ, "PATH": f"{sandbox.sim_bin}:{os.environ['PATH']}", **env},
    )
    path = sandbox.tickets / "T-1" / "bench_add.json"
    art = sandbox.artifact("add")
    assert check_artifact(art, path) == [], "gpuverify check must re-derive the same artifact"
    return art, proc, package, wt, installed


def _session(sandbox) -> list[str]:
    from session_cmd import PYTEST

    return [*PYTEST, "--gpu-verify", "--gpu-window", "0.3", "--gpu-env", str(sandbox.env_path), "--ticket", "T-1"]


@pytest.mark.parametrize("where", ["host", "container"])
@pytest.mark.parametrize("layout", ["liger", "flaggems"])
def test_the_checkout_put_first_by_the_ini_passes_over_an_installed_release(sandbox, tmp_path, layout, where):
    art, proc, package, wt, installed = run(sandbox, tmp_path, layout, where, with_pythonpath=True)
    assert art.verdict == "PASS", (art.reasons, out(proc))
    own = f"{wt}/src/{package}/__init__.py"
    assert art.imports == {package: own}
    record = art.import_origins[package]
    assert (record.predicted, record.seen, record.observed, record.checkout) == (own, "imported", own, own)
    assert f"{wt}/src" in record.predicted_path and record.processes >= 1
    assert art.run.imports_outside == []


@pytest.mark.parametrize("where", ["host", "container"])
@pytest.mark.parametrize("layout", ["liger", "flaggems"])
def test_without_the_ini_pythonpath_the_installed_release_shadows_the_checkout(sandbox, tmp_path, layout, where):
    art, proc, package, wt, installed = run(sandbox, tmp_path, layout, where, with_pythonpath=False)
    assert art.verdict == "INCONCLUSIVE", (art.reasons, out(proc))
    own = f"{wt}/src/{package}/__init__.py"
    assert art.reasons[0] == (
        f"{package} was imported from {installed}, outside the worktree {wt}/, not from its "
        f"own {own}: the run tested another copy"
    )
    assert art.imports == {package: installed} and art.run.ran and art.exit_code == 0
    record = art.import_origins[package]
    assert (record.predicted, record.seen, record.observed) == (installed, "imported", installed)
    # an unsigned edit of the record, of the verdict's reason, or of the origin taken: `check` names it
    path = sandbox.tickets / "T-1" / "bench_add.json"
    inside = record.model_copy(update={"observed": own})
    for edit, said in (
        ({"run": art.run.model_copy(update={"imports_outside": []})}, "run.imports_outside does not match"),
        ({"import_origins": {package: inside}}, "run.imports_outside does not match"),
        ({"imports": {package: own}}, f"imports.{package} is {own}, the run's import record"),
        ({"import_origins": {}}, "import_origins records []"),
    ):
        problems = check_artifact(art.model_copy(update=edit), path)
        assert any(said in p for p in problems), (list(edit), problems)


def test_a_declared_package_the_run_imports_from_the_checkout_is_never_refused(sandbox, tmp_path):
    """Declared, the package is required: before, the check without ``src`` found it nowhere and the target
    never ran. Its conftest puts ``src`` first at run time, which no prediction reads: the run's own record
    says the checkout's copy was imported, and that decides."""
    repo, package, test = make_repo(sandbox, "liger", with_pythonpath=False)
    (repo / "conftest.py").write_text(
        "import os, sys\n\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), 'src'))\n"
    )
    (repo / "gpuverify.toml").write_text(
        f'[[targets]]\nname = "add"\nkind = "pytest"\npath = "{test}"\npackages = ["{package}"]\n'
    )
    commit(repo, "declared, with a conftest that puts src first")
    sandbox.rewrite_env(repo_rows=[*sandbox.spec.repo_rows, (repo.name, repo, sandbox.container, str(repo))])
    proc = subprocess.run(
        [*_session(sandbox), "--gpu-container", "none", "gpuverify.toml"],
        cwd=repo,
        capture_output=True,
        timeout=300,
        env={**os.environ, "PATH": f"{sandbox.sim_bin}:{os.environ['PATH']}"},
    )
    art = sandbox.artifact("add")
    assert check_artifact(art, sandbox.tickets / "T-1" / "bench_add.json") == []
    assert art.verdict == "PASS", (art.reasons, out(proc))
    own = f"{repo.resolve()}/src/{package}/__init__.py"
    record = art.import_origins[package]
    assert (record.predicted, record.observed, art.imports) == (None, own, {package: own})
    assert (
        f"{package}: predicted not importable, but the run imported it from {own}: the run's own record decides"
        in art.notes
    )
