"""Properties of the aiter parser on hostile input: it never raises, and it never calls an output
``passed`` unless a readable correctness result was printed."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_gpuverify.parsers.aiter import parse_aiter_output
from pytest_gpuverify.parsers.result import ParsedOutput

PROPERTY_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# A passing run that uses every format the parser reads.
VALID_PASSING_OUTPUT = """\
[aiter] start build [module_quant] under /opt/aiter/aiter/jit/build/module_quant
[aiter] finish build [module_quant], cost 19.54064721s
[aiter]\x20
calling test_quant(dtype                        = torch.bfloat16,
                   m                            = 16)
[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[32mpassed~\x1b[0m]
[aiter] triton: dynamic quant[checkAllclose atol=0.01 rtol=0.01 \x1b[33mwarning!\x1b[0m] a and b results are not all close
[aiter] -->max abs delta:0.0625, delta details: 0.3% (12 of 4096) elements
[aiter] [perf] dim: (4, 32, 8192)        dtype: torch.float16, torch avg: 16.19    us, B avg: 6.30     us, \
uplift: 156.9%[checkAllclose atol=0.01 rtol=0.01 passed~]
[aiter] quant summary (markdown):
| dtype          |    m |   ck us |   ck TFLOPS |   ck err |   triton us |   triton err |
|:---------------|-----:|--------:|------------:|---------:|------------:|-------------:|
| torch.bfloat16 |   16 | 3.22013 |    0.002604 |        0 |     4.10022 |     0.000122 |
| torch.bfloat16 |   32 | 3.30117 |    0.005081 |        0 |     4.20001 |            0 |
[aiter] summary:
            dtype   m   ck us  ck err
0  torch.bfloat16  16  3.2201     0.0
1  torch.bfloat16  32  3.3012     0.0
[aiter] done
"""
VALID_LINES = VALID_PASSING_OUTPUT.splitlines(keepends=True)

# Pieces of aiter output, so random text reaches the parser's states and not only its fallbacks.
FRAGMENTS = [
    "[aiter] ", "[aiter INFO] 2026-01-01 00:00:00,000.000 - MainProcess:1 - /x.py:1 - f",
    "[checkAllclose atol=0.01 rtol=0.01 ",
    "passed~]", "warning!]", "failed!]", "catastrophic!]", "\x1b[32m", "\x1b[0m", "-->max abs delta:", "nan", "inf",
    "NaN", "None", "1.5", "0.97", "0", "| ", " |", "|:---|---:|", "|------:|", " us", "ck us", "err", "TFLOPS",
    "summary:", "summary (markdown):", "[perf] dim: (4, 32, 8192)", "torch avg: 1.2 us", "B avg: 3 us",
    "uplift: 5.0%", "calling test_x(", "    a    : ", "AssertionError: catastrophic error", "...", "..",
    "[3 rows x 9 columns]", "  ", " ", "\t", "=", ",", ":", "0  ", "Empty DataFrame",
]

random_lines = st.lists(
    st.one_of(
        st.text(max_size=80),
        st.lists(st.sampled_from(FRAGMENTS), max_size=8).map("".join),
    ),
    max_size=40,
).map(lambda lines: "\n".join(lines))


def parse_bytes(data: bytes) -> ParsedOutput:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.txt"
        path.write_bytes(data)
        return parse_aiter_output(path)


def assert_sound(result: ParsedOutput) -> None:
    """What must hold for every input."""
    assert not [p for p in result.problems if "parser error" in p], result.problems
    ParsedOutput.model_validate_json(result.model_dump_json())  # JSON-clean: no NaN slips through
    correctness = result.correctness
    if correctness.passed is True:
        # an output without a readable correctness result is never passed
        assert result.checks or correctness.checks_passed + correctness.checks_warning > 0
        assert correctness.shapes_checked > 0
        assert not result.failures
    if result.failures:
        assert correctness.passed is False
    assert correctness.nan_count >= 0 and correctness.checks_failed >= 0


@PROPERTY_SETTINGS
@given(st.binary(max_size=4000))
def test_random_bytes(data: bytes) -> None:
    assert_sound(parse_bytes(data))


@PROPERTY_SETTINGS
@given(random_lines)
def test_random_text_lines(text: str) -> None:
    assert_sound(parse_bytes(text.encode("utf-8", errors="surrogatepass")))


mutation = st.tuples(
    st.sampled_from(["delete", "duplicate", "corrupt", "insert_failed"]),
    st.integers(min_value=0, max_value=len(VALID_LINES) - 1),
    st.binary(min_size=1, max_size=12),
)


@PROPERTY_SETTINGS
@given(st.lists(mutation, max_size=6), st.one_of(st.none(), st.integers(min_value=0)))
def test_mutated_valid_output(mutations: list[tuple[str, int, bytes]], cut: int | None) -> None:
    lines = [line.encode() for line in VALID_LINES]
    for kind, index, junk in mutations:
        index %= len(lines) if lines else 1
        if not lines:
            break
        if kind == "delete":
            del lines[index]
        elif kind == "duplicate":
            lines.insert(index, lines[index])
        elif kind == "corrupt":
            line = lines[index]
            at = len(junk) % (len(line) or 1)
            lines[index] = line[:at] + junk + line[at + len(junk) :]
        else:
            lines.insert(index, b"[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[31mfailed!\x1b[0m]\n")
    data = b"".join(lines)
    if cut is not None:
        data = data[: cut % (len(data) + 1)]
    result = parse_bytes(data)
    assert_sound(result)
    if b"[checkAllclose atol=0.01 rtol=0.01 \x1b[31mfailed!\x1b[0m]" in data:
        assert result.correctness.passed is False


def test_the_unmutated_output_passes() -> None:
    result = parse_bytes(VALID_PASSING_OUTPUT.encode())
    assert_sound(result)
    assert result.correctness.passed is True
    assert result.problems == [] and result.failures == []
    assert len(result.perf) == 2 + 4 + 2  # legacy torch/B, markdown ck/triton x2, pandas ck x2
