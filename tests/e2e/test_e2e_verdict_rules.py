"""The verdict's rules on artifacts the engine writes (a real session, a real container), and
``gpuverify check`` re-deriving each of them: the output dtype and where it was read, the
per-shape cosine_sim lines, declared pass/fail words, NaN in a printed result, ``err_ratio_max``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_gpuverify.cli.main import main
from pytest_gpuverify.records.artifact import read_artifact

pytestmark = pytest.mark.docker

PER_SHAPE = """\
import sys
# a kernel test that prints one line per shape, cosine_sim and max_abs_error, a PASS word, a summary
worst = float(sys.argv[1]) if len(sys.argv) > 1 else 0.9987
shapes = [(m, 4096) for m in (1, 16, 32, 64, 128, 256, 512, 1024)]
for m, n in shapes:
    cos = worst if m == 128 else 0.9995
    print(f"M={m} N={n}: cosine_sim={cos}, max_abs_error={2.3e-04 if m == 128 else 1.1e-04:.1e} PASS")
print("All 8 tests passed")
"""
H200_HARNESS = """\
for n in (512, 1024, 2048):
    print(f"N={n}: cosine_sim=1.000000 max_abs_error=0.000000")
"""
FP8_OP_TEST = """\
import sys
# an aiter op_test whose output is fp8: the dtype column and the dtype= argument say so
rows = []
for i, m in enumerate((16, 32)):
    print("[aiter] ")
    print("calling test_gemm(dtype                        = torch.float8_e4m3fnuz,")
    print(f"                  m                            = {m})")
    print("[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \\x1b[32mpassed~\\x1b[0m]")
    if "--snr" in sys.argv:
        print(f"[aiter] m={m}: SNR: {31.5 - 2 * i} dB")
    rows.append(f"| torch.float8_e4m3fnuz | {m} | 1536 | 7168 | {3.1 + i:g} | 0 |")
print("[aiter] gemm summary (markdown):")
print("| dtype | m | n | k | ck us | ck err |")
print("|:------|--:|--:|--:|------:|-------:|")
print("\\n".join(rows))
"""
TUTORIAL = """\
import sys
# the Triton tutorials' own words
print("\\u274c Triton and Torch differ" if "--wrong" in sys.argv else "\\u2705 Triton and Torch match")
"""
NAN_RESULT = """\
print("[checkAllclose atol=0.01 rtol=0.01 passed~]")
print("output: tensor([nan, 1.0000, 2.0000], device='cuda:0')")
"""
SMALL_ERR = """\
print("gemm summary (markdown):")
print("| m | us | err |")
print("|--:|---:|----:|")
print("| 16 | 3.2 | 0.03 |")
"""
DECLARATIONS = """\
[[targets]]
name = "per_shape"
kind = "bench"
command = "python3 bench/per_shape.py"

[[targets]]
name = "per_shape-one-bad"
kind = "bench"
command = "python3 bench/per_shape.py 0.95"

[[targets]]
name = "per_shape-strict"
kind = "bench"
command = "python3 bench/per_shape.py"
[targets.thresholds]
cosine_sim_min = 0.999

[[targets]]
name = "h200-harness"
kind = "bench"
command = "python3 bench/h200_harness.py"
[targets.thresholds]
cosine_sim_min = 0.99

[[targets]]
name = "per_shape-abs-limit-unprinted"
kind = "bench"
command = "python3 bench/per_shape.py"
[targets.thresholds]
logits_diff_max = 0.002

[[targets]]
name = "fp8-no-snr"
path = "op_tests/test_gemm_fp8.py"

[[targets]]
name = "fp8-snr"
path = "op_tests/test_gemm_fp8.py"
args = ["--snr"]

[[targets]]
name = "gemm-d-fp8"
path = "op_tests/test_gemm_a8w8.py"
args = ["-d", "fp8"]

[[targets]]
name = "tutorial"
kind = "bench"
command = "python3 bench/tutorial.py"
pass_pattern = "✅ Triton and Torch match"
fail_pattern = "❌ Triton and Torch differ"

[[targets]]
name = "tutorial-wrong"
kind = "bench"
command = "python3 bench/tutorial.py --wrong"
pass_pattern = "✅ Triton and Torch match"
fail_pattern = "❌ Triton and Torch differ"

[[targets]]
name = "tutorial-undeclared"
kind = "bench"
command = "python3 bench/tutorial.py"

[[targets]]
name = "nan-result"
kind = "bench"
command = "python3 bench/nan_result.py"

[[targets]]
name = "err-ratio"
kind = "bench"
command = "python3 bench/small_err.py"
[targets.thresholds]
err_ratio_max = 0.01

[[targets]]
name = "err-ratio-default"
kind = "bench"
command = "python3 bench/small_err.py"
"""
FILES = {
    "bench/per_shape.py": PER_SHAPE,
    "bench/h200_harness.py": H200_HARNESS,
    "op_tests/test_gemm_fp8.py": FP8_OP_TEST,
    "bench/tutorial.py": TUTORIAL,
    "bench/nan_result.py": NAN_RESULT,
    "bench/small_err.py": SMALL_ERR,
    "gpuverify.toml": DECLARATIONS,
}


@pytest.fixture(scope="module")
def made(tmp_path_factory, docker_client) -> Path:
    """Every target above, run once by the engine; the ticket directory it wrote."""
    from kernel_repos import commit
    from sandboxes import make_sandbox

    with make_sandbox(tmp_path_factory.mktemp("rules") / "host", docker_client) as box:
        for rel, text in FILES.items():
            (box.repo / rel).write_text(text, encoding="utf-8")
        commit(box.repo, "verdict rule targets")
        proc = box.pytest("gpuverify.toml", ticket="R-1")
        assert (box.tickets / "R-1" / "bench_per_shape.json").exists(), proc.stdout.decode()[-3000:]
        return box.tickets / "R-1"


def art(made: Path, topic: str):
    return read_artifact(made / f"bench_{topic}.json")


def rule_reasons(a) -> list[str]:
    """The reasons besides the facts recorded as null (the sandbox has no torch: versions)."""
    return [r for r in a.reasons if r not in a.run.unknowns]


def test_per_shape_lines_are_checks(made):
    a = art(made, "per_shape")
    assert a.verdict == "PASS", a.reasons
    c = a.correctness
    assert c.passed is True and c.shapes_checked == 8 and c.checks_passed == 8
    assert c.cosine_sim == 0.9987 and c.max_abs_error == pytest.approx(2.3e-04)
    bad = art(made, "per_shape-one-bad")
    assert bad.verdict == "FAIL" and rule_reasons(bad) == [
        "line 5: M=128 N=4096: cosine_sim 0.95 is below the default 0.99"
    ]
    strict = art(made, "per_shape-strict")
    assert strict.verdict == "FAIL" and rule_reasons(strict) == [
        "line 5: M=128 N=4096: cosine_sim 0.9987 is below the declared limit 0.999"
    ]
    h200 = art(made, "h200-harness")
    assert h200.verdict == "PASS" and h200.correctness.shapes_checked == 3, h200.reasons
    unprinted = art(made, "per_shape-abs-limit-unprinted")
    assert unprinted.verdict == "INCONCLUSIVE"
    assert rule_reasons(unprinted) == ["logits_diff limit 0.002 declared, but the output printed no logits_diff"]


def test_fp8_output_needs_an_snr_wherever_the_dtype_is_read(made):
    a = art(made, "fp8-no-snr")
    assert a.verdict == "INCONCLUSIVE" and a.correctness.dtype == "torch.float8_e4m3fnuz"
    assert rule_reasons(a) == [
        "torch.float8_e4m3fnuz output without an SNR (dtype from output line 2: argument 'dtype')"
    ]
    ok = art(made, "fp8-snr")
    assert ok.verdict == "PASS" and ok.correctness.snr_db == 29.5, ok.reasons
    d = art(made, "gemm-d-fp8")
    assert d.correctness.dtype == "fp8" and d.correctness.dtype_source == "command: -d fp8"
    assert d.verdict == "INCONCLUSIVE" and rule_reasons(d) == ["fp8 output without an SNR (dtype from command: -d fp8)"]
    plain = read_artifact(made / "bench_per_shape.json")
    assert plain.correctness.dtype is None and plain.correctness.dtype_source is None


def test_declared_words_and_nan_in_the_result(made):
    assert art(made, "tutorial").verdict == "PASS"
    assert art(made, "tutorial").correctness.shapes_checked == 1
    wrong = art(made, "tutorial-wrong")
    assert wrong.verdict == "FAIL" and rule_reasons(wrong) == [
        "line 1: fail_pattern matches: ❌ Triton and Torch differ"
    ]
    assert art(made, "tutorial-undeclared").verdict == "PASS"  # Triton's words are default verdict lines now
    nan = art(made, "nan-result")
    assert nan.verdict == "FAIL" and nan.correctness.nan_count == 1
    assert nan.reasons[0].startswith("line 2: NaN/inf in the printed result: output: tensor([nan")


def test_err_ratio_max_is_applied(made):
    a = art(made, "err-ratio")
    assert a.verdict == "FAIL" and a.correctness.err_ratio == 0.03
    assert a.reasons[0] == "line 4: err 0.03 > 0.01 (the declared err_ratio_max) in column 'err' (m=16)"
    assert art(made, "err-ratio-default").verdict == "PASS"  # 0.03 is under aiter's own 0.05


def check(path: Path, capsys) -> tuple[int, str]:
    rc = main(["check", str(path)])
    return rc, capsys.readouterr().out


TOPICS = [
    "per_shape",
    "per_shape-one-bad",
    "per_shape-strict",
    "h200-harness",
    "per_shape-abs-limit-unprinted",
    "fp8-no-snr",
    "fp8-snr",
    "gemm-d-fp8",
    "tutorial",
    "tutorial-wrong",
    "nan-result",
    "err-ratio",
]


@pytest.mark.parametrize("topic", TOPICS)
def test_check_re_derives_every_new_rule(made, topic, capsys):
    rc, text = check(made / f"bench_{topic}.json", capsys)
    assert rc == 0 and "MISMATCH" not in text, text


TAMPERINGS = {
    "dtype made bf16": (
        "fp8-no-snr",
        lambda d: d["correctness"].update(dtype="torch.bfloat16"),
        "correctness.dtype is 'torch.bfloat16', the raw output gives 'torch.float8_e4m3fnuz'",
    ),
    "dtype source edited": (
        "gemm-d-fp8",
        lambda d: d["correctness"].update(dtype_source="declaration"),
        "correctness.dtype_source is 'declaration', the raw output gives 'command: -d fp8'",
    ),
    "-d fp8 dropped from the command": (
        "gemm-d-fp8",
        lambda d: d.update(command=d["command"].replace(" -d fp8", "")),
        "correctness.dtype is 'fp8', the raw output gives 'torch.bfloat16'",
    ),
    "a per-shape limit loosened": (
        "per_shape-strict",
        lambda d: d["target"]["thresholds"].update(cosine_sim_min=0.99),
        "correctness.passed is False, the raw output gives True",
    ),
    "shapes_checked edited": (
        "per_shape",
        lambda d: d["correctness"].update(shapes_checked=9),
        "correctness.shapes_checked is 9, the raw output gives 8",
    ),
    "fail_pattern removed": (
        "tutorial-wrong",
        lambda d: d["target"].update(fail_pattern=None),
        "reason extra: line 1: fail_pattern matches: ❌ Triton and Torch differ",
    ),
    "pass_pattern made a bad regex": (
        "tutorial",
        lambda d: d["target"].update(pass_pattern="(unclosed"),
        "verdict is PASS, re-derived INCONCLUSIVE: ",
    ),
    "err_ratio edited": (
        "err-ratio",
        lambda d: d["correctness"].update(err_ratio=0.001),
        "correctness.err_ratio is 0.001, the raw output gives 0.03",
    ),
    "err_ratio_max dropped": (
        "err-ratio",
        lambda d: d["target"]["thresholds"].pop("err_ratio_max"),
        "verdict is FAIL, re-derived PASS",
    ),
    "nan_count zeroed": (
        "nan-result",
        lambda d: d["correctness"].update(nan_count=0),
        "correctness.nan_count is 0, the raw output gives 1",
    ),
}


@pytest.mark.parametrize("name", list(TAMPERINGS))
def test_check_catches_tampering_with_the_new_fields(made, name, tmp_path, capsys):
    topic, change, expected = TAMPERINGS[name]
    here = tmp_path / made.name  # the ticket's name: the artifacts' key
    shutil.copytree(made, here)
    path = here / f"bench_{topic}.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    rc, text = check(path, capsys)
    assert rc == 1 and any(line.removeprefix("MISMATCH ").startswith(expected) for line in text.splitlines()), (
        expected,
        text,
    )
