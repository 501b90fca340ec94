"""The env file reader: the reference example, the Markdown leniency, and one clear error per mistake."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from pytest_gpuverify.config.envfile import (
    EnvFile,
    EnvFileError,
    EnvFileMissing,
    LockPrefixError,
    LockSpec,
    default_env_path,
    load_env_file,
    parse_env_text,
    parse_lock_prefix,
)

# The reference env file, copied into tests/data with its source line, so no test depends on the folders
# around the checkout; a missing copy is an error at collection, never a skip.
REFERENCE_FILE = Path(__file__).resolve().parents[2] / "data" / "spec" / "env.example.md"
REFERENCE_EXAMPLE = REFERENCE_FILE.read_text(encoding="utf-8")
HOSTS_HEADER = "| host | ssh alias | arch | gpus |\n|---|---|---|---|\n"


def hosts_file(*rows: str) -> str:
    return "## Hosts\n\n" + HOSTS_HEADER + "".join(row + "\n" for row in rows)


def section(name: str, header: str, *rows: str) -> str:
    """A `## name` section holding one table; ``header`` is the column names joined by |."""
    separator = "|".join("---" for _ in header.split("|"))
    return f"## {name}\n| {header} |\n|{separator}|\n" + "".join(row + "\n" for row in rows)


REPOS = "repo | path | container | mount"
CONTAINERS = "name | image | host"
GPU_LOCK = "host | picker | lock"


def write(tmp_path: Path, content: str | bytes) -> Path:
    path = tmp_path / "env.md"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def check_reference(env: EnvFile) -> None:
    assert env.resources.repos == Path("/home/dev/repos")
    assert env.resources.tickets == Path("/home/dev/tickets")
    assert env.resources.extra == {}
    assert [h.host for h in env.hosts] == ["mi355x-07", "mi300x-12"]
    local, remote = env.hosts
    assert (local.ssh_alias, local.arch, local.gpus, local.is_local) == ("local", "gfx950", 8, True)
    assert (remote.ssh_alias, remote.arch, remote.gpus, remote.is_local) == ("mi300x-12", "gfx942", 8, False)
    aiter = env.repo("aiter")
    assert aiter is not None
    assert aiter.path == Path("/home/dev/repos/aiter")
    assert (aiter.container, aiter.mount) == ("aiter-dev", "/workspace/aiter")
    image = "rocm/pytorch:rocm7.0_ubuntu24.04_py3.12_pytorch_release_2.8.0"
    assert env.container("flydsl-dev").image == image
    assert env.container("flydsl-dev").host == "mi355x-07"
    builtin, scripted = env.gpu_locks
    assert builtin.picker == "builtin" and builtin.picker_is_builtin
    assert builtin.lock == "flock -E 75 -w 600 /var/lock/gpu-<id>.lock"
    assert scripted.picker == "python3 /opt/tools/pick_gpu.py --window 3" and not scripted.picker_is_builtin
    assert scripted.lock_spec.path_for(3) == Path("/tmp/gpu3.lock")
    for section in ("Resources", "Hosts", "Repos", "Containers", "GPU lock"):
        env.require(section)


# --- the reference example ---------------------------------------------------------------------


def test_reference_example_parses(tmp_path):
    env = load_env_file(write(tmp_path, REFERENCE_EXAMPLE))
    check_reference(env)
    assert env.path == tmp_path / "env.md"


def test_parse_env_text_needs_no_file():
    check_reference(parse_env_text(REFERENCE_EXAMPLE, "~/.cursor/mstack/env.md"))


# --- Markdown leniency ---------------------------------------------------------------------------


def test_headings_and_columns_match_in_any_case_and_spacing():
    text = (
        "#  Title\n\n##   HOSTS  \n\n"
        "|  Host | SSH   Alias | ARCH | Gpus|\n| :--- |:--:| ---: |---|\n| box | LOCAL | GFX942 | 4 |\n\n"
        "## gpu Lock\n\nhost | Picker | LOCK\n---|---|---\nbox | builtin | flock -x /tmp/g<id>.lock\n\n"
        "## Repos ##\n\n| repo | path | container | mount |\n|-|-|-|-|\n| aiter | /r/aiter | c | /w |\n"
    )
    env = parse_env_text(text, "env.md")
    assert env.hosts[0].ssh_alias == "LOCAL" and env.hosts[0].is_local
    assert env.hosts[0].arch == "gfx942"
    assert env.hosts_for_arch("GFX942") == env.hosts and env.hosts_for_arch("gfx950") == []
    assert env.gpu_lock("BOX").lock == "flock -x /tmp/g<id>.lock"
    assert env.repo("AITER").path == Path("/r/aiter")


def test_column_order_and_extra_columns_do_not_matter():
    text = section("Hosts", "gpus | note | arch | host | ssh_alias", "| 2 | spare | sm_90 | h1 | - |")
    host = parse_env_text(text, "env.md").host("h1")
    assert (host.gpus, host.arch, host.ssh_alias, host.is_local) == (2, "sm_90", "-", True)


def test_backticks_are_stripped_from_cells():
    text = hosts_file("| `box` | `box-ssh` | `gfx950` | `8` |") + (
        "\n## GPU lock\n| host | picker | lock |\n|---|---|---|\n"
        "| box | `` pick --sep ` `` | `flock -E 75 -w 600 /var/lock/gpu-<id>.lock` |\n"
    )
    env = parse_env_text(text, "env.md")
    assert env.host("box").model_dump() == {
        "host": "box",
        "ssh_alias": "box-ssh",
        "arch": "gfx950",
        "gpus": 8,
        "python": None,
    }
    assert env.gpu_lock("box").picker == "pick --sep `"
    assert env.gpu_lock("box").lock == "flock -E 75 -w 600 /var/lock/gpu-<id>.lock"


def test_not_set_and_empty_cells_are_unset():
    text = hosts_file("| box | not set | `Not Set` |  |") + (
        "\n"
        + section("Repos", REPOS, "| aiter | NOT SET | | not set |")
        + "\n## GPU lock\n| host | picker | lock |\n|---|---|---|\n| box | not set | |\n"
        "\n## Resources\n| resource | path |\n|---|---|\n| tickets | not set |\n| scratch | |\n"
    )
    env = parse_env_text(text, "env.md")
    assert env.host("box").model_dump() == {
        "host": "box",
        "ssh_alias": None,
        "arch": None,
        "gpus": None,
        "python": None,
    }
    assert not env.host("box").is_local
    assert env.repo("aiter").model_dump() == {"repo": "aiter", "path": None, "container": None, "mount": None}
    assert env.gpu_lock("box").picker is None and env.gpu_lock("box").lock_spec is None
    assert env.resources.tickets is None and env.resources.extra == {}


def test_escaped_pipe_stays_in_the_cell():
    text = (
        "## GPU lock\n| host | picker | lock |\n|---|---|---|\n"
        "| box | `amd-smi list \\| head -1` | flock -w 5 /tmp/gpu-<id>.lock |\n"
    )
    assert parse_env_text(text, "env.md").gpu_lock("box").picker == "amd-smi list | head -1"


def test_prose_unknown_sections_fenced_code_and_blank_rows_are_ignored():
    text = (
        "# env\n\nSome prose with a | pipe.\n\n## Notes\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "## Hosts\n\nThe hosts we use.\n\n" + HOSTS_HEADER + "| box | local | gfx942 | 8 |\n|  |  |  |  |\n\n"
        "### Details\n\nMore prose.\n\n```\n## Hosts\n| x | y |\n|---|---|\n```\n"
    )
    env = parse_env_text(text, "env.md")
    assert [h.host for h in env.hosts] == ["box"]
    assert env.rows_per_section == {"Hosts": 1}


def test_resources_extra_and_home_expansion(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    text = "## Resources\n| resource | path |\n|---|---|\n| Tickets | ~/tickets |\n| Scratch | /scratch |\n"
    env = parse_env_text(text, "env.md")
    assert env.resources.tickets == tmp_path / "tickets"
    assert env.resources.repos is None
    assert env.resources.extra == {"scratch": "/scratch"}


def test_missing_sections_parse_as_empty_and_require_reports_them():
    env = parse_env_text(hosts_file("| box | local | gfx942 | 8 |"), "env.md")
    assert env.repos == [] and env.containers == [] and env.gpu_locks == []
    env.require("hosts")
    with pytest.raises(EnvFileError) as caught:
        env.require("Repos")
    assert str(caught.value) == (
        "env.md: section 'Repos' is missing. Fix: add a '## Repos' table with columns "
        "| repo | path | container | mount |, or run `/setup-mstack env`."
    )
    with pytest.raises(ValueError):
        env.require("Hostz")


def test_require_reports_an_empty_table():
    env = parse_env_text("## GPU lock\n| host | picker | lock |\n|---|---|---|\n", "env.md")
    with pytest.raises(EnvFileError) as caught:
        env.require("gpu  LOCK")
    assert caught.value.section == "GPU lock"
    assert "no rows" in str(caught.value) and "Fix:" in str(caught.value)


# --- lookups -------------------------------------------------------------------------------------


def repos_env(tmp_path: Path) -> EnvFile:
    base = tmp_path / "repos"
    for name in ("aiter", "aiter2", "aiter/vendor/ck"):
        (base / name).mkdir(parents=True, exist_ok=True)
    text = (
        "## Repos\n| repo | path | container | mount |\n|---|---|---|---|\n"
        f"| aiter | {base}/aiter | aiter-dev | /workspace/aiter |\n"
        f"| ck | {base}/aiter/vendor/ck | ck-dev | /workspace/ck |\n"
        f"| FlyDSL | {base}/FlyDSL | not set | not set |\n"
        "| ghost | not set | x | /x |\n"
        "\n" + section("Containers", CONTAINERS, "| aiter-dev | img:1 | box |", "| Aiter-Dev | img:2 | box |")
    )
    return parse_env_text(text, tmp_path / "env.md")


def test_repo_for_path_matches_the_repo_and_worktrees_inside_it(tmp_path):
    env = repos_env(tmp_path)
    base = tmp_path / "repos"
    assert env.repo_for_path(base / "aiter").repo == "aiter"
    worktree = base / "aiter" / ".worktrees" / "fix-gemm"
    worktree.mkdir(parents=True)
    assert env.repo_for_path(worktree).repo == "aiter"
    assert env.repo_for_path(str(worktree / "op_tests" / "test_gemm.py")).repo == "aiter"
    assert env.repo_for_path(base / "aiter" / "vendor" / "ck" / "include").repo == "ck"  # deepest wins
    assert env.repo_for_path(base / "aiter" / ".." / "FlyDSL" / "python").repo == "FlyDSL"


def test_repo_for_path_does_not_match_a_sibling_with_a_common_prefix(tmp_path):
    env = repos_env(tmp_path)
    assert env.repo_for_path(tmp_path / "repos" / "aiter2") is None
    assert env.repo_for_path(tmp_path / "repos" / "aiter2" / "op_tests") is None
    assert env.repo_for_path(tmp_path / "repos") is None


def test_repo_for_path_literal_paths_in_the_brief():
    text = section("Repos", REPOS, "| aiter | /home/dev/repos/aiter | c | /w |")
    env = parse_env_text(text, "env.md")
    assert env.repo_for_path("/home/dev/repos/aiter2") is None
    assert env.repo_for_path("/home/dev/repos/aiter/.worktrees/a").repo == "aiter"


def test_repo_for_path_follows_symlinks(tmp_path):
    env = repos_env(tmp_path)
    link = tmp_path / "link-to-aiter"
    link.symlink_to(tmp_path / "repos" / "aiter")
    assert env.repo_for_path(link / "op_tests").repo == "aiter"


def test_repo_and_container_lookups(tmp_path):
    env = repos_env(tmp_path)
    assert env.repo("flydsl").repo == "FlyDSL" and env.repo("nope") is None
    assert env.container("aiter-dev").image == "img:1"
    assert env.container("Aiter-Dev").image == "img:2"  # docker names are case-sensitive
    assert env.container("AITER-DEV") is None


def test_host_and_gpu_lock_lookups():
    env = parse_env_text(REFERENCE_EXAMPLE, "env.md")
    assert env.host("MI300X-12").arch == "gfx942"
    assert env.host("mi250") is None
    assert [h.host for h in env.hosts_for_arch("gfx950")] == ["mi355x-07"]
    assert env.gpu_lock("mi355x-07").lock_spec == LockSpec(
        path_template="/var/lock/gpu-<id>.lock", wait_s=600.0, conflict_exit_code=75
    )
    assert env.gpu_lock("unknown") is None


def test_models_are_frozen():
    env = parse_env_text(REFERENCE_EXAMPLE, "env.md")
    with pytest.raises(ValidationError):
        env.hosts[0].gpus = 4


# --- errors: one line naming file, section, row and the fix ----------------------------------------


def load_error(tmp_path: Path, content: str | bytes) -> EnvFileError:
    with pytest.raises(EnvFileError) as caught:
        load_env_file(write(tmp_path, content))
    error = caught.value
    line = str(error)
    assert "\n" not in line and str(tmp_path / "env.md") in line and "Fix:" in line
    return error


def assert_points_at(error: EnvFileError, section: str, row: int | None) -> None:
    line = str(error)
    assert error.section == section and f"section '{section}'" in line
    assert error.row == row
    if row is not None:
        assert f"row {row}" in line


def test_bad_gpus_error_matches_the_documented_form():
    text = hosts_file("| mi355x-07 | local | gfx950 | 8 |", "| mi300x-12 | mi300x-12 | gfx942 | eight |")
    with pytest.raises(EnvFileError) as caught:
        parse_env_text(text, "~/.cursor/mstack/env.md")
    assert str(caught.value) == (
        "~/.cursor/mstack/env.md: section 'Hosts', row 2 (mi300x-12): gpus 'eight' is not a number. "
        "Fix: write the GPU count, e.g. 8."
    )
    assert (caught.value.row, caught.value.row_label) == (2, "mi300x-12")


@pytest.mark.parametrize("gpus", ["-1", "8.0", "²", "many"])
def test_gpus_must_be_a_non_negative_integer(tmp_path, gpus):
    assert_points_at(load_error(tmp_path, hosts_file(f"| box | local | gfx942 | {gpus} |")), "Hosts", 1)


@pytest.mark.parametrize("arch", ["mi300", "gfx942:sramecc+:xnack-", "sm90", "gfx", "cuda"])
def test_bad_arch(tmp_path, arch):
    error = load_error(tmp_path, hosts_file("| ok | local | gfx942 | 8 |", f"| box | local | {arch} | 8 |"))
    assert_points_at(error, "Hosts", 2)
    assert "gfx942" in error.fix


def test_duplicate_host_is_an_error_whatever_the_case(tmp_path):
    error = load_error(tmp_path, hosts_file("| Box | local | gfx942 | 8 |", "| box | box | gfx950 | 8 |"))
    assert_points_at(error, "Hosts", 2)
    assert "twice" in error.message


def test_duplicate_repo_and_container_names(tmp_path):
    repos = section("Repos", REPOS, "| aiter | /a | c | /w |", "| AITER | /b | c | /w |")
    assert_points_at(load_error(tmp_path, repos), "Repos", 2)
    containers = section("Containers", CONTAINERS, "| c1 | i | h |", "| c2 | i | h |", "| c1 | j | h |")
    assert_points_at(load_error(tmp_path, containers), "Containers", 3)


def test_duplicate_section(tmp_path):
    text = hosts_file("| a | local | gfx942 | 8 |") + "\n" + hosts_file("| b | b | gfx942 | 8 |")
    error = load_error(tmp_path, text)
    assert_points_at(error, "Hosts", None)


@pytest.mark.parametrize(
    "row", ["| box | local | gfx942 |", "| box | local | gfx942 | 8 | extra |", "| box | a|b | gfx942 | 8 |"]
)
def test_row_with_the_wrong_number_of_cells(tmp_path, row):
    error = load_error(tmp_path, hosts_file("| ok | local | gfx942 | 8 |", row))
    assert_points_at(error, "Hosts", 2)
    assert "cells" in error.message and "\\|" in error.fix


def test_missing_column_names_the_expected_header(tmp_path):
    error = load_error(tmp_path, section("Hosts", "host | alias | arch | gpus", "| box | local | gfx942 | 8 |"))
    assert_points_at(error, "Hosts", None)
    assert "'ssh alias'" in error.message
    assert "Hosts needs columns: host | ssh alias | arch | gpus" in str(error)


def test_known_section_without_a_table(tmp_path):
    error = load_error(tmp_path, "## Repos\n\nnot set yet\n\n## Hosts\n" + HOSTS_HEADER)
    assert_points_at(error, "Repos", None)
    assert "repo | path | container | mount" in error.fix


def test_section_with_two_tables(tmp_path):
    text = hosts_file("| a | local | gfx942 | 8 |") + "\n" + HOSTS_HEADER + "| b | b | gfx950 | 8 |\n"
    error = load_error(tmp_path, text)
    assert_points_at(error, "Hosts", None)


def test_empty_key_cell(tmp_path):
    assert_points_at(load_error(tmp_path, hosts_file("| not set | local | gfx942 | 8 |")), "Hosts", 1)


def test_relative_mount_and_relative_host_path(tmp_path):
    header = "## Repos\n| repo | path | container | mount |\n|---|---|---|---|\n"
    error = load_error(tmp_path, header + "| aiter | /home/dev/repos/aiter | aiter-dev | workspace/aiter |\n")
    assert_points_at(error, "Repos", 1)
    assert "mount" in error.message and "/workspace/aiter" in error.fix
    assert_points_at(load_error(tmp_path, header + "| aiter | repos/aiter | c | /w |\n"), "Repos", 1)
    resources = "## Resources\n| resource | path |\n|---|---|\n| repos | /r |\n| tickets | tickets |\n"
    assert_points_at(load_error(tmp_path, resources), "Resources", 2)


def test_bad_lock_cell_points_at_its_row(tmp_path):
    text = section(
        "GPU lock",
        GPU_LOCK,
        "| a | builtin | flock /tmp/a-<id>.lock |",
        "| b | builtin | `flock -s /tmp/b-<id>.lock` |",
    )
    error = load_error(tmp_path, text)
    assert_points_at(error, "GPU lock", 2)
    assert "shared" in error.message and str(error).endswith("Fix: drop -s; a GPU lock is exclusive.")


def test_non_utf8_bytes_name_the_line_section_and_row(tmp_path):
    content = hosts_file("| ok | local | gfx942 | 8 |", "| b\xe9 | local | gfx942 | 8 |").encode("latin-1")
    error = load_error(tmp_path, content)
    assert_points_at(error, "Hosts", 2)
    assert "0xe9" in error.message and "line 6" in error.message and "UTF-8" in error.fix


def test_non_utf8_byte_in_prose_is_still_reported(tmp_path):
    error = load_error(tmp_path, "# caf\xe9\n".encode("latin-1") + REFERENCE_EXAMPLE.encode())
    assert (error.section, error.row) == (None, None)
    assert "line 1" in error.message


@pytest.mark.parametrize(
    "garbage", [bytes(range(256)) * 4, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"\xff\xfe\xfd\xfc" * 64]
)
def test_binary_garbage_is_a_clear_error(tmp_path, garbage):
    error = load_error(tmp_path, garbage)
    assert "not" in error.message and "Fix:" in str(error)


def test_a_utf8_bom_is_accepted(tmp_path):
    check_reference(load_env_file(write(tmp_path, "\ufeff" + REFERENCE_EXAMPLE)))


def test_windows_line_endings_are_accepted(tmp_path):
    check_reference(load_env_file(write(tmp_path, REFERENCE_EXAMPLE.replace("\n", "\r\n"))))


# --- missing file and the default path -------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(EnvFileMissing) as caught:
        load_env_file(tmp_path / "nope" / "env.md")
    line = str(caught.value)
    assert str(tmp_path / "nope" / "env.md") in line
    assert "/setup-mstack env" in line and "--gpu-env" in line and "GPUVERIFY_ENV" in line
    assert "\n" not in line and isinstance(caught.value, EnvFileError)


def test_missing_file_is_named_as_the_user_wrote_it(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(EnvFileMissing) as caught:
        load_env_file(default_env_path(None, {}))
    assert str(caught.value).startswith("~/.cursor/mstack/env.md: ")


def test_an_oversized_file_is_refused_unread(tmp_path):
    write(tmp_path, REFERENCE_EXAMPLE + "\n" + "x" * (2 << 20))
    error = load_error(tmp_path, (tmp_path / "env.md").read_bytes())
    assert "too big" in error.message and not isinstance(error, EnvFileMissing)


def test_a_directory_is_unreadable(tmp_path):
    with pytest.raises(EnvFileMissing) as caught:
        load_env_file(tmp_path)
    assert "/setup-mstack env" in str(caught.value)


def test_tilde_path_is_expanded(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    write(tmp_path, REFERENCE_EXAMPLE)
    env = load_env_file(Path("~/env.md"))
    assert env.path == tmp_path / "env.md"


def test_default_env_path():
    assert default_env_path("/x/env.md", {"GPUVERIFY_ENV": "/y/env.md"}) == Path("/x/env.md")
    assert default_env_path(Path("rel.md"), {}) == Path("rel.md")
    assert default_env_path(None, {"GPUVERIFY_ENV": "/y/env.md"}) == Path("/y/env.md")
    assert default_env_path("", {"GPUVERIFY_ENV": "  "}) == Path("~/.cursor/mstack/env.md")
    assert default_env_path(None, {}) == Path("~/.cursor/mstack/env.md")


# --- the flock prefix ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prefix, template, wait_s, exit_code",
    [
        ("flock -E 75 -w 600 /var/lock/gpu-<id>.lock", "/var/lock/gpu-<id>.lock", 600.0, 75),
        ("flock -x -w 30 /tmp/gpu<id>.lock", "/tmp/gpu<id>.lock", 30.0, None),
        ("flock --timeout 600 --conflict-exit-code 75 /tmp/x-<id>.lock", "/tmp/x-<id>.lock", 600.0, 75),
        ("flock -n /tmp/gpu<id>.lock", "/tmp/gpu<id>.lock", 0.0, None),
        ("flock --nonblock -E 75 /tmp/gpu<id>.lock", "/tmp/gpu<id>.lock", 0.0, 75),
        ("flock -w 600 -n /tmp/gpu<id>.lock", "/tmp/gpu<id>.lock", 0.0, None),
        ("flock /tmp/gpu<id>.lock", "/tmp/gpu<id>.lock", None, None),
        ("flock --wait=2.5 --conflict-exit-code=3 /tmp/g<id>", "/tmp/g<id>", 2.5, 3),
        ("flock -xw600 -E75 /tmp/g<id>", "/tmp/g<id>", 600.0, 75),
        ("/usr/bin/flock -o -e -w 0 -- '/var/lock/my gpus/<id>.lock'", "/var/lock/my gpus/<id>.lock", 0, None),
    ],
)
def test_parse_lock_prefix_forms(prefix, template, wait_s, exit_code):
    spec = parse_lock_prefix(prefix)
    assert (spec.path_template, spec.wait_s, spec.conflict_exit_code) == (template, wait_s, exit_code)
    assert spec.shared is False


def test_lock_path_for():
    spec = parse_lock_prefix("flock -E 75 -w 600 /var/lock/gpu-<id>.lock")
    assert spec.path_for(0) == Path("/var/lock/gpu-0.lock")
    assert spec.path_for(7) == Path("/var/lock/gpu-7.lock")
    for bad in (-1, True, "3", 1.0):
        with pytest.raises(ValueError):
            spec.path_for(bad)


@pytest.mark.parametrize(
    "prefix, words",
    [
        ("", "does not start with `flock`"),
        ("lockf /tmp/gpu<id>.lock", "does not start with `flock`"),
        ("sudo flock /tmp/gpu<id>.lock", "does not start with `flock`"),
        ("flock -w 600", "no lock file"),
        ("flock -w", "needs a value"),
        ("flock -w 600 /var/lock/gpu.lock", "no <id>"),
        ("flock -w 600 gpu-<id>.lock", "relative"),
        ("flock -w 600 /tmp/gpu-<id>.lock -c 'python3 x.py'", "command after the lock file"),
        ("flock -c 'python3 x.py' /tmp/gpu-<id>.lock", "command (-c)"),
        ("flock --command=true /tmp/gpu-<id>.lock", "command (-c)"),
        ("flock /tmp/gpu-<id>.lock python3 x.py", "command after the lock file"),
        ("flock -s /tmp/gpu-<id>.lock", "excludes nothing"),
        ("flock --shared /tmp/gpu-<id>.lock", "excludes nothing"),
        ("flock -u /tmp/gpu-<id>.lock", "releases a lock"),
        ("flock -q /tmp/gpu-<id>.lock", "'-q' is not supported"),
        ("flock --frobnicate /tmp/gpu-<id>.lock", "'--frobnicate' is not supported"),
        ("flock -w soon /tmp/gpu-<id>.lock", "not a number"),
        ("flock -w -5 /tmp/gpu-<id>.lock", "out of range"),
        ("flock -w inf /tmp/gpu-<id>.lock", "out of range"),
        ("flock -E 300 /tmp/gpu-<id>.lock", "out of range"),
        ("flock -E 0 /tmp/gpu-<id>.lock", "out of range"),
        ("flock -E x /tmp/gpu-<id>.lock", "not a number"),
        ("flock -w 600 '/tmp/gpu-<id>.lock", "not valid shell"),
    ],
)
def test_parse_lock_prefix_errors(prefix, words):
    with pytest.raises(LockPrefixError) as caught:
        parse_lock_prefix(prefix)
    assert isinstance(caught.value, ValueError)
    assert words in caught.value.message
    assert caught.value.fix and "Fix:" in str(caught.value)


def test_errors_survive_pickling():
    import pickle

    error = EnvFileError("env.md", "gpus 'x' is not a number", "write 8.", section="Hosts", row=2, row_label="h")
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.row, copy.section) == (EnvFileError, str(error), 2, "Hosts")
    missing = pickle.loads(pickle.dumps(EnvFileMissing("env.md", "gone", "run it.")))
    assert isinstance(missing, EnvFileMissing) and str(missing) == "env.md: gone. Fix: run it."
    lock = pickle.loads(pickle.dumps(LockPrefixError("bad", "fix it.")))
    assert (lock.message, lock.fix) == ("bad", "fix it.")
