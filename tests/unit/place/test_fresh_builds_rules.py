"""The rules of `run` Containers rows and [[builds]] declarations, and the device plan of a fresh
container, read from real files (an env file, a gpuverify.toml, a KFD topology tree)."""

from __future__ import annotations

import pytest

from pytest_gpuverify.config import containers
from pytest_gpuverify.config.declarations import DeclarationError, load_declarations
from pytest_gpuverify.config.envfile import EnvFileError, parse_env_text
from pytest_gpuverify.place import ephemeral
from pytest_gpuverify.records.builds import BuildRecord, build_failure

HEAD = "## Containers\n\n| name | image | host | mounts | env |\n|---|---|---|---|---|\n"


def test_run_row_keeps_its_mounts_and_env():
    env = parse_env_text(
        HEAD + '| run:dev | rocm/pytorch:latest | mi355x-07 | /opt/models:/opt/models:ro, /data:/data | A=1 B="x y" |\n'
        "| aiter-dev | rocm/pytorch:latest | mi355x-07 | | |\n",
        "env.md",
    )
    row = env.container("run:dev")
    assert containers.parse_mounts(row.mounts) == [("/opt/models", "/opt/models", "ro"), ("/data", "/data", "rw")]
    assert containers.parse_env(row.env) == {"A": "1", "B": "x y"}
    assert env.container("aiter-dev").mounts is None


@pytest.mark.parametrize(
    "row, words",
    [
        (
            "| aiter-dev | img | h | /a:/a | |",
            "column 'mounts' is set on container 'aiter-dev', which is not a `run` row",
        ),
        ("| run | not set | h | | |", "a `run` row has no image"),
        ("| run | img | h | models:/opt/models | |", "mount 'models:/opt/models' is not HOST:CONTAINER[:ro|rw]"),
        ("| run | img | h | | 1A=2 |", "env '1A=2' is not NAME=VALUE"),
    ],
)
def test_bad_run_rows_stop_with_the_row_and_the_fix(row, words):
    with pytest.raises(EnvFileError) as err:
        parse_env_text(HEAD + row + "\n", "env.md")
    message = str(err.value)
    assert "env.md: section 'Containers', row 1" in message and words in message and "Fix:" in message


def test_only_run_names_are_fresh_rows():
    assert containers.is_run_name("run") and containers.is_run_name("run:mi50grad")
    assert (
        not containers.is_run_name("runner")
        and not containers.is_run_name("aiter-run")
        and not containers.is_run_name(None)
    )


def kfd_tree(tmp_path, minors):
    """A KFD topology: node 0 a CPU, then one node per GPU with its render minor."""
    nodes = tmp_path / "nodes"
    (nodes / "0").mkdir(parents=True)
    (nodes / "0" / "gpu_id").write_text("0\n")
    (nodes / "0" / "properties").write_text("cpu_cores_count 64\n")
    for i, minor in enumerate(minors, start=1):
        (nodes / str(i)).mkdir()
        (nodes / str(i) / "gpu_id").write_text(f"{1000 + i}\n")
        (nodes / str(i) / "properties").write_text(f"simd_count 304\ndrm_render_minor {minor}\n")
    return str(nodes)


def test_render_nodes_follow_the_kfd_gpu_nodes(tmp_path):
    nodes = kfd_tree(tmp_path, [128, 136, 144])
    assert ephemeral.render_nodes([2, 0], nodes) == {2: "/dev/dri/renderD144", 0: "/dev/dri/renderD128"}
    assert ephemeral.render_nodes([5], nodes) == {}
    assert ephemeral.render_nodes([0], str(tmp_path / "absent")) == {}


def test_device_plan_passes_only_what_exists_and_names_the_rest(tmp_path):
    nodes = kfd_tree(tmp_path, [128, 136])
    passed, missing, visible = ephemeral.device_plan([1], "rocm", nodes)
    on_host = [d for d in ("/dev/kfd", "/dev/dri/renderD136") if ephemeral.os.path.exists(d)]
    assert passed == on_host and set(passed) | set(missing) == {"/dev/kfd", "/dev/dri/renderD136"}
    assert visible == ("0" if len(on_host) == 2 else None)  # renumbered only when the container really gets them
    passed, missing, visible = ephemeral.device_plan([0], "nvidia", nodes)
    assert passed == [] and visible is None and "NVIDIA" in missing[0]


def declare(tmp_path, text):
    (tmp_path / "gpuverify.toml").write_text(text)
    return load_declarations(tmp_path / "gpuverify.toml")


def test_builds_are_read_with_defaults(tmp_path):
    decls = declare(
        tmp_path,
        '[[builds]]\ncommand = "make hip_kernels c_extensions"\n'
        '[[builds]]\nname = "tune"\ncommand = ["python3", "tune.py"]\ngpu = true\nworkdir = "csrc"\n',
    )
    make, tune = decls.builds
    assert (make.name, make.command, make.gpu) == ("make", ("make", "hip_kernels", "c_extensions"), False)
    assert (tune.name, tune.gpu, tune.workdir) == ("tune", True, "csrc")


@pytest.mark.parametrize(
    "block, words",
    [
        ('[[builds]]\nname = "x"\n', "builds[1], key 'command': the build has no command"),
        ('[[builds]]\ncommand = "make"\ngpu = "yes"\n', "key 'gpu': gpu is 'yes', not true or false"),
        ('[[builds]]\ncommand = "make"\ncmd = "x"\n', "key 'cmd': unknown key 'cmd'"),
        (
            '[[builds]]\ncommand = "make"\n[[builds]]\ncommand = "make all"\n',
            "builds[2], key 'name': name 'make' is not a unique name",
        ),
        ('[[builds]]\ncommand = "make"\nworkdir = "../x"\n', "workdir '../x' is not a path inside the worktree"),
        ('builds = "make"\n', "builds is not a list of tables"),
    ],
)
def test_bad_builds_stop_with_the_place_and_the_fix(tmp_path, block, words):
    with pytest.raises(DeclarationError) as err:
        declare(tmp_path, block)
    assert words in str(err.value) and "Fix:" in str(err.value)


def test_build_failure_names_the_first_failed_command():
    ok = BuildRecord(name="a", command="make a", exit_code=0)
    assert build_failure([ok]) is None
    assert build_failure([ok, BuildRecord(name="b", command="make b", exit_code=2)]) == "build failed: make b exited 2"
    assert (
        build_failure([BuildRecord(name="c", command="make c", exit_code=124, timed_out=True)])
        == "build failed: make c timed out"
    )
    no_gpu = BuildRecord(name="d", command="tune", problem="did not run (NoGpu: NO_GPU: ...)")
    assert build_failure([no_gpu]) == "build failed: tune: did not run (NoGpu: NO_GPU: ...)"
