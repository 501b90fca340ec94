"""Target declarations: both file forms, the upward search, defaults, and one clear error per mistake."""

from __future__ import annotations

import pickle
import textwrap
from pathlib import Path

import pytest
from declaration_cases import assert_place, error, load, pyproject_form, write

from pytest_gpuverify.config.declarations import (
    DeclarationError,
    Defaults,
    find_declarations,
    load_declarations,
    select,
)
from pytest_gpuverify.config.targets import (
    AITER_OP_TEST,
    BENCH,
    FLYDSL_PYTEST,
    TRITON_PYTEST,
    Target,
    Thresholds,
)

# The module docstring's example, in gpuverify.toml form (no tool.gpuverify prefix).
EXAMPLE = """\
regime = "cold-L2"
dtype = "bf16"
gpus = 1
[thresholds]
cosine_sim_min = 0.99

[[targets]]
name = "gemm-a8w8-bf16"
kind = "aiter-op-test"
path = "op_tests/test_gemm_a8w8.py"
args = ["-d", "bf16", "-m", "128"]
topic = "gemm_a8w8_bf16"
dtype = "fp8"
regime = "warm"
gpus = 1
[targets.thresholds]
max_abs_error_max = 0.01

[[targets]]
name = "ab-harness"
kind = "bench"
command = "python3 bench/hillclimb.py --interleave"
repo = "aiter"
workdir = "."
"""


# -- the two forms ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gpuverify.toml", "pyproject.toml"])
def test_example_reads_in_both_forms(repo: Path, name: str) -> None:
    decls = load(repo, EXAMPLE, name)
    assert decls.path == repo / name
    assert decls.defaults == Defaults(
        regime="cold-L2", dtype="bf16", gpus=1, thresholds=Thresholds(cosine_sim_min=0.99)
    )
    gemm, harness = decls.targets
    assert gemm == Target(
        name="gemm-a8w8-bf16",
        kind=AITER_OP_TEST,
        path=(repo / "op_tests/test_gemm_a8w8.py").resolve(),
        command=None,
        args=("-d", "bf16", "-m", "128"),
        topic="gemm_a8w8_bf16",
        gpus=1,
        dtype="fp8",
        regime="warm",
        thresholds=Thresholds(cosine_sim_min=0.99, max_abs_error_max=0.01),
    )
    assert gemm.path.is_absolute()
    assert harness == Target(
        name="ab-harness",
        kind=BENCH,
        path=None,
        command=("python3", "bench/hillclimb.py", "--interleave"),
        args=(),
        topic="ab-harness",
        gpus=1,
        dtype="bf16",
        regime="cold-L2",
        thresholds=Thresholds(cosine_sim_min=0.99),
        repo="aiter",
        workdir=".",
    )
    assert decls.names == ["gemm-a8w8-bf16", "ab-harness"]


def test_both_forms_give_the_same_targets(repo: Path) -> None:
    a = load(repo, EXAMPLE, "gpuverify.toml")
    b = load(repo, EXAMPLE, "pyproject.toml")
    assert a.targets == b.targets and a.defaults == b.defaults


def test_pyproject_without_the_table(repo: Path) -> None:
    path = write(repo / "pyproject.toml", '[project]\nname = "x"\n')
    with pytest.raises(DeclarationError, match=r"no \[tool.gpuverify\] table.*Fix: add"):
        load_declarations(path)
    path.write_text("[tool]\ngpuverify = 1\n")
    with pytest.raises(DeclarationError, match="tool.gpuverify is a number, not a table"):
        load_declarations(path)


def test_gpuverify_toml_with_the_pyproject_prefix(repo: Path) -> None:
    exc = error(repo, '[[tool.gpuverify.targets]]\nname = "x"\npath = "bench/hillclimb.py"\n')
    assert_place(exc, "top level", key="tool")
    assert "drop the prefix" in exc.fix


def test_pyproject_errors_name_the_prefixed_table(repo: Path) -> None:
    exc = error(repo, "regim = 'warm'\n", "pyproject.toml")
    assert_place(exc, "[tool.gpuverify]", key="regim")
    exc = error(repo, "[thresholds]\ncosine = 0.9\n", "pyproject.toml")
    assert_place(exc, "[tool.gpuverify]", key="thresholds.cosine")


def test_target_line_is_named_in_both_forms(repo: Path) -> None:
    broken = EXAMPLE.replace('repo = "aiter"', "repo = 3")
    exc = error(repo, broken)
    assert_place(exc, "targets[2] (ab-harness) at line 19", key="repo")
    exc = error(repo, broken, "pyproject.toml")
    assert_place(exc, "targets[2] (ab-harness) at line 23", key="repo")


def test_inline_array_of_targets_has_no_line(repo: Path) -> None:
    decls = load(repo, 'targets = [{name = "a", path = "bench/hillclimb.py", kind = "bench"}]\n')
    assert decls.targets[0].path == (repo / "bench/hillclimb.py").resolve()
    exc = error(repo, 'targets = [{name = "a", path = "bench/hillclimb.py", kind = "benc"}]\n')
    assert_place(exc, "targets[1] (a)", key="kind")
    assert " at line " not in exc.where


def test_no_targets_is_allowed(repo: Path) -> None:
    assert load(repo, 'regime = "warm"\n').targets == []


# -- the upward search -----------------------------------------------------------------------------


def test_find_prefers_the_nearest_directory(repo: Path) -> None:
    write(repo / "pyproject.toml", pyproject_form(EXAMPLE))
    sub = repo / "op_tests" / "deep"
    sub.mkdir(parents=True)
    assert find_declarations(sub, repo) == repo / "pyproject.toml"
    write(repo / "op_tests" / "gpuverify.toml", "")
    assert find_declarations(sub, repo) == repo / "op_tests" / "gpuverify.toml"
    assert (
        find_declarations(repo / "op_tests" / "test_gemm_a8w8.py", repo) == repo / "op_tests" / "gpuverify.toml"
    )  # a file as start: its directory


def test_gpuverify_toml_wins_over_pyproject_in_one_directory(repo: Path) -> None:
    write(repo / "pyproject.toml", pyproject_form(EXAMPLE))
    write(repo / "gpuverify.toml", EXAMPLE)
    assert find_declarations(repo, repo) == repo / "gpuverify.toml"


def test_find_skips_a_pyproject_without_the_table(repo: Path) -> None:
    write(repo / "pyproject.toml", pyproject_form(EXAMPLE))
    write(repo / "bench" / "pyproject.toml", '[project]\nname = "bench"\n')
    write(repo / "op_tests" / "pyproject.toml", "this is [ not toml\n")  # not ours: skipped
    assert find_declarations(repo / "bench", repo) == repo / "pyproject.toml"
    assert find_declarations(repo / "op_tests", repo) == repo / "pyproject.toml"


def test_find_raises_for_a_broken_pyproject_that_mentions_us(repo: Path) -> None:
    write(repo / "pyproject.toml", "[tool.gpuverify\nregime = 'warm'\n")
    with pytest.raises(DeclarationError, match=r"line 1, column 16: not valid TOML"):
        find_declarations(repo / "bench", repo)


def test_find_stops_at_stop(repo: Path, tmp_path: Path) -> None:
    write(tmp_path / "gpuverify.toml", EXAMPLE)  # above the worktree: never read
    write(tmp_path / "pyproject.toml", pyproject_form(EXAMPLE))
    assert find_declarations(repo / "bench", repo) is None
    assert find_declarations(repo, repo) is None
    write(repo / "gpuverify.toml", "")
    assert find_declarations(repo / "bench", repo) == repo / "gpuverify.toml"


def test_start_outside_stop_searches_only_stop(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    write(other / "gpuverify.toml", EXAMPLE)
    assert find_declarations(other, repo) is None
    write(repo / "gpuverify.toml", "")
    assert find_declarations(other, repo) == repo / "gpuverify.toml"


# -- defaults, kinds, args -------------------------------------------------------------------------


def test_defaults_apply_unless_the_target_sets_its_own(repo: Path) -> None:
    decls = load(
        repo,
        """\
        regime = "warm"
        dtype = "bf16"
        gpus = 2
        [thresholds]
        cosine_sim_min = 0.99
        max_abs_error_max = 0.1

        [[targets]]
        name = "inherits"
        path = "op_tests/test_gemm_a8w8.py"

        [[targets]]
        name = "overrides"
        path = "op_tests/test_gemm_a8w8.py"
        regime = "hipGraph"
        dtype = "mxfp4"
        gpus = 1
        thresholds = { max_abs_error_max = 0.01, snr_db_min = 20 }
        """,
    )
    inherits, overrides = decls.targets
    assert (inherits.regime, inherits.dtype, inherits.gpus) == ("warm", "bf16", 2)
    assert inherits.thresholds == Thresholds(cosine_sim_min=0.99, max_abs_error_max=0.1)
    assert (overrides.regime, overrides.dtype, overrides.gpus) == ("hipGraph", "mxfp4", 1)
    assert overrides.thresholds == Thresholds(cosine_sim_min=0.99, max_abs_error_max=0.01, snr_db_min=20.0)


def test_without_defaults_a_target_gets_one_gpu_and_nothing_else(repo: Path) -> None:
    (target,) = load(repo, '[[targets]]\nname = "t"\npath = "op_tests/test_gemm_a8w8.py"\n').targets
    assert (target.gpus, target.dtype, target.regime, target.repo, target.workdir) == (1, None, None, None, None)
    assert target.thresholds == Thresholds() and target.args == () and target.topic == "t"


@pytest.mark.parametrize(
    "path, kind",
    [
        ("op_tests/test_gemm_a8w8.py", AITER_OP_TEST),
        ("op_tests/triton_tests/test_gemm.py", TRITON_PYTEST),
        ("tests/kernels/test_moe.py", FLYDSL_PYTEST),
    ],
)
def test_kind_comes_from_the_path(repo: Path, path: str, kind: str) -> None:
    (target,) = load(repo, f'[[targets]]\nname = "t"\npath = "{path}"\n').targets
    assert target.kind == kind and target.path == (repo / path).resolve()


def test_kind_from_the_path_when_the_file_sits_in_a_subdirectory(repo: Path) -> None:
    decls = load_declarations(
        write(repo / "op_tests" / "gpuverify.toml", '[[targets]]\nname = "t"\npath = "test_gemm_a8w8.py"\n')
    )
    assert decls.targets[0].kind == AITER_OP_TEST


def test_a_declared_kind_wins_over_the_path(repo: Path) -> None:
    (target,) = load(repo, '[[targets]]\nname = "t"\nkind = "bench"\npath = "op_tests/test_gemm_a8w8.py"\n').targets
    assert target.kind == BENCH and target.command is None


@pytest.mark.parametrize(
    "args, expected",
    [
        ('"-d bf16 -m 128"', ("-d", "bf16", "-m", "128")),
        ('["-d", "bf16", "-m", "128"]', ("-d", "bf16", "-m", "128")),
        ("""'-k "gemm and not slow" -x'""", ("-k", "gemm and not slow", "-x")),
        ('["-k", "gemm and not slow"]', ("-k", "gemm and not slow")),
        ('""', ()),
        ("[]", ()),
    ],
)
def test_args_string_or_list(repo: Path, args: str, expected: tuple[str, ...]) -> None:
    (target,) = load(repo, f'[[targets]]\nname = "t"\npath = "op_tests/test_gemm_a8w8.py"\nargs = {args}\n').targets
    assert target.args == expected


def test_bench_command_string_list_or_path(repo: Path) -> None:
    decls = load(
        repo,
        """\
        [[targets]]
        name = "string"
        kind = "bench"
        command = "python3 bench/hillclimb.py --shapes '1 2'"
        args = "--iters 50"

        [[targets]]
        name = "list"
        kind = "bench"
        command = ["python3", "bench/hillclimb.py"]

        [[targets]]
        name = "file"
        kind = "bench"
        path = "bench/hillclimb.py"
        """,
    )
    string, listed, file = decls.targets
    assert string.command == ("python3", "bench/hillclimb.py", "--shapes", "1 2")
    assert string.args == ("--iters", "50") and string.path is None
    assert listed.command == ("python3", "bench/hillclimb.py")
    assert file.command is None and file.path == (repo / "bench/hillclimb.py").resolve()


def test_regime_spelling_is_normalised(repo: Path) -> None:
    assert load(repo, 'regime = "COLD-l2"\n').defaults.regime == "cold-L2"
    assert load(repo, 'regime = "hipgraph"\n').defaults.regime == "hipGraph"


def test_integer_thresholds_become_floats(repo: Path) -> None:
    assert load(repo, "[thresholds]\nsnr_db_min = 20\n").defaults.thresholds.snr_db_min == 20.0


# -- select() --------------------------------------------------------------------------------------


def test_select_by_name(repo: Path) -> None:
    decls = load(repo, EXAMPLE)
    gemm, harness = decls.targets
    assert select(decls, ["ab-harness", "gemm-a8w8-bf16"]) == [harness, gemm]
    assert select(decls, ["AB-Harness", "ab-harness"]) == [harness]  # case-insensitive, each once
    assert select(decls, []) == []


def test_select_unknown_name_lists_the_known_ones(repo: Path) -> None:
    decls = load(repo, EXAMPLE)
    with pytest.raises(DeclarationError) as info:
        select(decls, ["gemm-a8w8-bf61"])
    text = str(info.value)
    assert str(decls.path) in text and "'gemm-a8w8-bf61'" in text and "Fix: " in text
    assert "did you mean 'gemm-a8w8-bf16'?" in text and "gemm-a8w8-bf16, ab-harness" in text
    with pytest.raises(DeclarationError, match="declares none"):
        select(load(repo, ""), ["x"])


# -- errors ---------------------------------------------------------------------------------------

T = '[[targets]]\nname = "t"\n'  # a target's opening lines; the cases add their keys
GEMM = 'path = "op_tests/test_gemm_a8w8.py"\n'

ERRORS = [
    # (declaration text, place fragment, key, message fragment, fix fragment)
    ('regim = "warm"\n', "top level", "regim", "unknown key 'regim'", "did you mean 'regime'?"),
    ('[[target]]\nname = "t"\n', "top level", "target", "unknown key", "plural"),
    (T + GEMM + 'arg = "-d bf16"\n', "targets[1] (t) at line 1", "arg", "unknown key 'arg'", "did you mean 'args'?"),
    (
        "[thresholds]\ncosine_min = 0.9\n",
        "top level",
        "thresholds.cosine_min",
        "unknown key",
        "cosine_sim_min, max_abs_error_max",
    ),
    (
        T + GEMM + "[targets.thresholds]\ncosine = 0.9\n",
        "targets[1] (t)",
        "thresholds.cosine",
        "unknown key 'cosine'",
        "allowed threshold keys are:",
    ),
    (T + GEMM + "thresholds = 0.9\n", "targets[1] (t)", "thresholds", "not a table", "cosine"),
    ('targets = "x"\n', "top level", "targets", "a string, not a list", "double brackets"),
    ('[targets]\nname = "t"\n', "top level", "targets", "a table, not a list", "[[targets]]"),
    ("[[targets]]\n" + GEMM, "targets[1]", "name", "no name", 'name = "gemm-a8w8-bf16"'),
    ("[[targets]]\nname = 5\n" + GEMM, "targets[1]", "name", "a number, not a text", "quoted"),
    ('[[targets]]\nname = "gemm a8w8"\n' + GEMM, "targets[1] (gemm a8w8)", "name", "other than letters", "'gemm_a8w8'"),
    (
        T + GEMM + 'kind = "aiter"\n',
        "targets[1] (t)",
        "kind",
        "not a target kind",
        "aiter-op-test, flydsl-pytest, triton-pytest, bench",
    ),
    (T + 'path = "bench/test_other.py"\n', "targets[1] (t)", "kind", "does not say which kind", 'kind = "bench"'),
    (T + 'command = "python3 x.py"\n', "targets[1] (t)", "kind", "nothing says", 'kind = "bench"'),
    (
        T + 'path = "op_tests/test_nope.py"\n',
        "targets[1] (t)",
        "path",
        "does not exist",
        "relative to this file's directory",
    ),
    (T + 'path = "../outside/test_x.py"\n', "targets[1] (t)", "path", "is outside", "inside"),
    (T + 'path = "op_tests"\nkind = "bench"\n', "targets[1] (t)", "path", "is not a file", "test file"),
    (T + 'path = "tests/kernels/test_moe.py::test_one"\n', "targets[1] (t)", "path", "names a test inside", '["-k"'),
    (T, "targets[1] (t)", "path", "path and command are both missing", "op_tests/test_<op>.py"),
    (T + 'kind = "bench"\n', "targets[1] (t)", "path", "both missing", "command ="),
    (
        T + GEMM + 'command = "python3 x.py"\n',
        "targets[1] (t)",
        "command",
        "given, but kind is aiter-op-test",
        'kind = "bench"',
    ),
    (
        T + 'kind = "flydsl-pytest"\ncommand = "pytest x"\n',
        "targets[1] (t)",
        "command",
        "flydsl-pytest",
        "drop command",
    ),
    (
        T + 'kind = "bench"\ncommand = "python3 \'x.py"\n',
        "targets[1] (t)",
        "command",
        "cannot be split",
        "close the quote",
    ),
    (T + 'kind = "bench"\ncommand = []\n', "targets[1] (t)", "command", "command is empty", "command ="),
    (T + 'kind = "bench"\ncommand = 7\n', "targets[1] (t)", "command", "a number; it must be", "quote every word"),
    (T + GEMM + 'args = ["-m", 128]\n', "targets[1] (t)", "args", "a list holding a number 128", '["-d", "bf16"]'),
    (T + GEMM + "args = true\n", "targets[1] (t)", "args", "a boolean", "quote every word"),
    (
        T + GEMM + '[[targets]]\nname = "t"\n' + GEMM,
        "targets[2] (t) at line 4",
        "name",
        "already used by targets[1] (t) at line 1",
        "its own name",
    ),
    (T + GEMM + '[[targets]]\nname = "T"\n' + GEMM, "targets[2] (T)", "name", "already used", "its own name"),
    (
        '[[targets]]\nname = "a"\n' + GEMM + '[[targets]]\nname = "b"\ntopic = "a"\n' + GEMM,
        "targets[2] (b)",
        "topic",
        "topic 'a' is already used by targets[1] (a)",
        "bench_<topic>",
    ),
    (T + GEMM + 'topic = "gemm/a8w8"\n', "targets[1] (t)", "topic", "not safe", "'gemm_a8w8'"),
    (T + GEMM + "gpus = 0\n", "targets[1] (t)", "gpus", "at least one GPU", "gpus = 1"),
    ("gpus = -2\n", "top level", "gpus", "at least one GPU", "gpus = 1"),
    (T + GEMM + 'gpus = "1"\n', "targets[1] (t)", "gpus", "a string, not a whole number", "without quotes"),
    (T + GEMM + "gpus = true\n", "targets[1] (t)", "gpus", "a boolean", "without quotes"),
    (T + GEMM + "gpus = 1.5\n", "targets[1] (t)", "gpus", "a number, not a whole", "gpus = 1"),
    (T + GEMM + 'regime = "cold"\n', "targets[1] (t)", "regime", "not a timing regime", "cold-L2, warm, hipGraph"),
    ("regime = 1\n", "top level", "regime", "a number, not a text", "quoted"),
    ("dtype = 8\n", "top level", "dtype", "not a text", "quoted"),
    (T + GEMM + 'dtype = ""\n', "targets[1] (t)", "dtype", "an empty string", "quoted"),
    ("thresholds = 0.5\n", "top level", "thresholds", "a number, not a table", "cosine_sim_min"),
    (
        "[thresholds]\ncosine_sim_min = inf\n",
        "top level",
        "thresholds.cosine_sim_min",
        "inf, not a finite number",
        "plain number",
    ),
    (
        T + GEMM + "thresholds = { snr_db_min = nan }\n",
        "targets[1] (t)",
        "thresholds.snr_db_min",
        "nan, not a finite",
        "plain number",
    ),
    (
        '[thresholds]\nerr_ratio_max = "0.05"\n',
        "top level",
        "thresholds.err_ratio_max",
        "a string, not a finite",
        "without quotes",
    ),
    ("[thresholds]\nerr_ratio_max = true\n", "top level", "thresholds.err_ratio_max", "a boolean", "plain number"),
    (
        "[thresholds]\nerr_ratio_max = 1" + "0" * 400 + "\n",
        "top level",
        "thresholds.err_ratio_max",
        "not a finite number",
        "plain number",
    ),
    (T + GEMM + 'workdir = "/abs"\n', "targets[1] (t)", "workdir", "leaves the worktree", "relative to the worktree"),
    (T + GEMM + 'workdir = "bench/../.."\n', "targets[1] (t)", "workdir", "leaves", "bench"),
    (T + GEMM + "repo = 3\n", "targets[1] (t)", "repo", "not a text", 'repo = "aiter"'),
]


@pytest.mark.parametrize(
    "text, place, key, message, fix", ERRORS, ids=[f"{i}-{case[2]}" for i, case in enumerate(ERRORS)]
)
def test_each_mistake_names_file_place_key_and_fix(repo, text, place, key, message, fix):
    exc = error(repo, text)
    assert_place(exc, place, key=key)
    assert message in exc.message, exc.message
    assert fix in exc.fix, exc.fix


@pytest.mark.parametrize(
    "text, place",
    [
        ("[tool.gpuverify\nregime = 1\n", "line 1, column 16"),
        ('regime = "warm"\nargs = \n', "line 2, column 8"),
        ('regime = "warm', "end of file"),
    ],
)
def test_invalid_toml_names_line_and_column(repo: Path, text: str, place: str) -> None:
    path = write(repo / "pyproject.toml", text)
    with pytest.raises(DeclarationError) as info:
        load_declarations(path)
    exc = info.value
    assert exc.where == place and exc.message.startswith("not valid TOML: ")
    assert "(at " not in exc.message  # the position is in `where`, not repeated
    assert str(exc).startswith(f"{path}: {place}: not valid TOML") and "Fix: " in str(exc)


def test_non_utf8_names_the_line(repo: Path) -> None:
    path = repo / "gpuverify.toml"
    path.write_bytes(b'regime = "warm"\n[[targets]]\nname = "caf\xe9"\n')
    with pytest.raises(DeclarationError) as info:
        load_declarations(path)
    assert info.value.where == "line 3" and "0xe9 is not UTF-8" in str(info.value)
    assert str(info.value).startswith(f"{path}: line 3:") and "Fix: save the file as UTF-8" in str(info.value)


def test_missing_file(repo: Path) -> None:
    with pytest.raises(DeclarationError, match="does not exist.*Fix: create"):
        load_declarations(repo / "gpuverify.toml")


def test_utf8_bom_is_accepted(repo: Path) -> None:
    path = repo / "gpuverify.toml"
    path.write_bytes(b'\xef\xbb\xbfregime = "warm"\n')
    assert load_declarations(path).defaults.regime == "warm"


def test_error_survives_pickling(repo: Path) -> None:
    exc = error(repo, T + GEMM + "gpus = 0\n")
    copy = pickle.loads(pickle.dumps(exc))
    assert (str(copy), copy.where, copy.key, copy.fix) == (str(exc), exc.where, exc.key, exc.fix)


def test_symlink_escaping_the_tree_is_outside(repo: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "elsewhere" / "test_x.py", "")
    (repo / "op_tests" / "test_link.py").symlink_to(outside)
    exc = error(repo, T + 'path = "op_tests/test_link.py"\n')
    assert_place(exc, "targets[1] (t)", key="path")
    assert "outside" in exc.message


def test_the_documented_example_is_valid_and_its_line_numbers_hold(repo: Path) -> None:
    import pytest_gpuverify.config.declarations as module

    doc = module.__doc__
    example = textwrap.dedent(doc[doc.index("::\n\n") + 4 : doc.index("\n\nKinds:")])
    path = write(repo / "pyproject.toml", '[project]\nname = "demo"\n\n' + example)
    decls = load_declarations(path)
    assert decls.targets == load(repo, EXAMPLE).targets
    path.write_text(example.replace('repo = "aiter"', "repo = 3"))  # as the docstring numbers it
    with pytest.raises(DeclarationError, match=r"targets\[2\] \(ab-harness\) at line 20, key 'repo'"):
        load_declarations(path)
