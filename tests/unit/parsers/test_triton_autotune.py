"""Triton's autotuner printout (parsers/recognizers/triton_autotune.py), from published TRITON_PRINT_AUTOTUNING
outputs in tests/data/triton_autotune/: each ``best config selected`` is a choice of the run, and none of
the autotuner's lines is a check, a perf row, an output dtype or a failure."""

from __future__ import annotations

from pathlib import Path

import pytest
from parse_cases import read_agreeing, verdict_of

from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH, PYTEST, TRITON_PYTEST
from pytest_gpuverify.parsers.recognizers.triton_autotune import read_config

DATA = Path(__file__).resolve().parents[2] / "data" / "triton_autotune"

pytestmark = pytest.mark.usefixtures("engine")


def printout(name: str) -> str:
    """A sample without its ``#`` header lines."""
    text = (DATA / name).read_text()
    assert text.startswith("# SOURCE:"), f"{name} has no '# SOURCE:' first line"
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("# "))


def choices(parsed) -> list[tuple]:
    return [
        (c.function, c.seconds, c.config.get("num_warps"), c.config.get("num_stages"), c.key) for c in parsed.autotune
    ]


@pytest.mark.parametrize("kind", [BENCH, PYTEST, AITER_OP_TEST])
def test_one_line_per_tuning_is_a_choice_each(kind: str) -> None:
    parsed = read_agreeing(printout("intel_pr3725_fa_autotune_pvc.txt"), kind, noise=None)
    assert choices(parsed) == [
        ("_attn_fwd", 161.22, 32, 3, None),
        ("_attn_fwd", 103.11, 16, 2, None),
        ("_attn_fwd", 123.41, 32, 4, None),
        ("_attn_fwd", 82.54, 16, 2, None),
        ("_attn_fwd", 108.71, 32, 4, None),
    ]
    first = parsed.autotune[0]
    assert first.config == {
        "BLOCK_M": 256,
        "BLOCK_N": 32,
        "grf_mode": "large",
        "one_matrix_per_load_for_bt": True,
        "num_warps": 32,
        "num_ctas": 1,
        "num_stages": 3,
        "maxnreg": None,
    }
    assert (first.source, first.line) == ("output", 1)
    assert parsed.perf == [] and parsed.failures == [] and parsed.problems == [] or kind == PYTEST
    assert parsed.correctness.checks_passed == parsed.correctness.shapes_checked == 0


def test_the_four_line_form_gives_its_key_and_no_dtype() -> None:
    parsed = read_agreeing(printout("triton_issue6636_key_multiline.txt"), BENCH)
    assert choices(parsed) == [
        (
            "_infonce_matmul_fwd_kernel",
            1.01,
            4,
            4,
            "(1024, 1024, 512, 'torch.float16', 'torch.float16', 'torch.float16')",
        )
    ]
    assert parsed.autotune[0].config["BLOCK_SIZE_N"] == 128
    assert parsed.dtypes_seen == [] and parsed.perf == [] and parsed.problems == []


def test_configurations_tried_are_owned_and_the_harness_lines_are_still_read() -> None:
    text = printout("ocnn_pr56_splitk_autotune.txt")
    parsed = read_agreeing(text, BENCH, noise=None)
    assert [(c.function, c.seconds, c.line) for c in parsed.autotune] == [
        ("conv_fwd_implicit_gemm_splitk_kernel", 0.58, 1),
        ("conv_fwd_implicit_gemm_splitk_kernel", 0.56, 7),
    ]
    autotuner_lines = {n for n, line in enumerate(text.splitlines(), 1) if "utotuning" in line}
    assert not [r for r in parsed.perf if r.source_line in autotuner_lines]


def test_an_inner_pytests_captured_tuning_lines_change_nothing_of_its_outcome() -> None:
    tried = printout("fla_issue640_gdn_autotuning_kernel.txt")
    passing = (
        "tests/ops/test_gated_delta.py .                                     [100%]\n"
        "==================================== PASSES ====================================\n"
        "----------------------------- Captured stdout call -----------------------------\n"
        + tried
        + printout("triton_issue6636_key_multiline.txt")
        + "=========================== short test summary info ============================\n"
        "PASSED tests/ops/test_gated_delta.py::test_chunk[64]\n"
        "1 passed in 110.20s\n"
    )
    parsed = read_agreeing(passing, TRITON_PYTEST)
    assert verdict_of(parsed, TRITON_PYTEST)[0] == "PASS"
    assert parsed.correctness.checks_passed == 1 and parsed.correctness.shapes_checked == 1
    assert [c.function for c in parsed.autotune] == ["_infonce_matmul_fwd_kernel"]


def test_a_configuration_that_cannot_run_is_no_failure() -> None:
    # autotuner.py's `print(f"Autotuning failed with {e}")` with Triton's OutOfResources message
    line = (
        "Autotuning failed with out of resource: shared memory, Required: 131072, Hardware limit: 101376. "
        "Reducing block sizes or `num_stages` may help.\n"
    )
    parsed = read_agreeing(line + printout("triton_issue6636_key_multiline.txt") + "status: PASS\n", BENCH)
    assert parsed.problems == [] and parsed.failures == []
    assert verdict_of(parsed)[0] == "PASS"
    assert len(parsed.autotune) == 1


def test_a_key_printed_inline_and_a_head_cut_off() -> None:
    text = (
        "Triton autotuning for function _k finished after 0.20s; key info: (8, 64), best config selected: "
        "BLOCK: 64, num_warps: 4;\n"
        "best config selected: BLOCK: 32, num_warps: 8, num_ctas: 1, num_stages: 2, maxnreg: None;\n"
    )
    parsed = read_agreeing(text, BENCH)
    assert [(c.function, c.key, c.config) for c in parsed.autotune] == [
        ("_k", "(8, 64)", {"BLOCK": 64, "num_warps": 4}),
        ("unknown", None, {"BLOCK": 32, "num_warps": 8, "num_ctas": 1, "num_stages": 2, "maxnreg": None}),
    ]


def test_a_four_line_head_without_its_choice_records_nothing() -> None:
    text = "Triton autotuning for function _k,\nwith key as (8,),\nstatus: PASS\nx\ny\nz\nw\nv\n"
    parsed = read_agreeing(text, BENCH)
    assert parsed.autotune == [] and verdict_of(parsed)[0] == "PASS"


def test_a_value_with_commas_stays_whole() -> None:
    assert read_config("SHAPE: (1, 2), num_warps: 4, ir_override: None") == {
        "SHAPE": "(1, 2)",
        "num_warps": 4,
        "ir_override": None,
    }
