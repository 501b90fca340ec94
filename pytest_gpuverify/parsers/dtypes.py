"""The output dtype of a target, from every source (docs/artifacts.md, "Verdicts": fp8/fp4/mxfp4 output without
an SNR proves nothing).

Sources, in this order: the declaration's ``dtype``; the ``-d``/``--dtype`` arguments of the command
as run (aiter's op_tests take ``-d`` as a list they sweep); what the output prints for
the shapes it checked (an output-dtype column of a summary table, a ``dtype=``/``dtype:`` key of a
checked shape). A low-precision dtype in any of them is the one the SNR rule applies to; otherwise
the first found is recorded, with where it was read.

Which columns and keys are the OUTPUT dtype (aiter's op_tests' summary tables and argparse flags):

- ``dst_dtype``, ``dst_type``, ``out_type``: the output (sgl-kernel's and vLLM's benchmarks); ``d_type``
  (hipBLASLt's and rocBLAS' D matrix: ``D = alpha*A*B + beta*C``, the output).
- ``dtype``: the output (``test_gemm_a8w8``'s ``-d`` is the GEMM's output dtype, ``bf16`` by default;
  ``test_moe_2stage``'s ``dtype`` is its activations' and output's); ``out_dtype``, ``output_dtype``,
  ``dtype_out``, ``o_dtype``, ``otype`` (``test_gemm_a16w16 -o/--otype``) likewise.
- Not the output: ``quantDtype``/``q_dtype``/``qType``/``quant_type``/``quant`` and ``AQDType``/
  ``WQDType`` name the quantisation of the INPUTS (a8w8: fp8 in, bf16 out); in ``test_quant`` the
  ``q_dtype`` tensor is compared element by element with torch's own quantisation of the same
  input (atol 1e-3), an exact check an SNR adds nothing to. ``kv_dtype``, ``w_dtype``, ``h_dtype``,
  ``in_dtype``, ``ref_dtype``, ``acc_dtype`` and any other ``*dtype`` are inputs or internals.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping

LOW_PRECISION = re.compile(r"(?:fp|float)[468](?!\d)|mxf(?:p)?[468]|nvfp4|e[2-5]m[1-3]", re.I)
OUTPUT_DTYPE_NAME = re.compile(
    r"(?:out(?:put)?[ _]?|dst[ _]?)?dtype|dtype[ _]?out|o_?dtype|otype|(?:out(?:put)?|dst)[ _]?type|d_?type", re.I
)
DTYPE_FLAGS = ("-d", "--dtype", "--dtypes", "--otype", "--out_dtype", "--out-dtype", "--output_dtype", "--output-dtype")
SEEN_CAP = 16
_CALLING = re.compile(r"^calling \w+\((?P<key>\w+)\s*=\s*(?P<value>[^\s,()]+)")


def is_low_precision(dtype: str | None) -> bool:
    return bool(dtype and LOW_PRECISION.search(dtype))


def is_output_dtype_name(name: str) -> bool:
    """Whether a column or shape key names the output dtype (see the module's list)."""
    return OUTPUT_DTYPE_NAME.fullmatch(name.strip()) is not None


def output_dtypes(row: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(dtype, column)`` for each output-dtype cell of one table row (column name -> cell)."""
    return [
        (cell.strip(), name)
        for name, cell in row.items()
        if cell and cell.strip() not in ("", "-", "None", "nan") and is_output_dtype_name(name)
    ]


class DtypeReader:
    """Records the output dtypes a parser meets into ``seen`` (a ParsedOutput's ``dtypes_seen``)."""

    def __init__(self, seen: list[tuple[str, str]]) -> None:
        self.seen = seen
        self._table: list | None = None  # the columns of the table last read, and its dtype columns
        self._columns: list[tuple[int, str]] = []

    def row(self, lineno: int, row: Mapping[str, str]) -> None:
        """One summary-table row, column name -> cell."""
        for dtype, column in output_dtypes(row):
            record_dtype(self.seen, dtype, f"output line {lineno}: column '{column}'")

    def table_row(self, lineno: int, columns: list, cells: list[str]) -> None:
        """A row of a table whose ``columns`` (each with a ``name``) are the same list for every row:
        their output-dtype columns are found once, and only those cells read."""
        if columns is not self._table:
            self._table = columns
            self._columns = [(i, c.name) for i, c in enumerate(columns) if is_output_dtype_name(c.name)]
        for i, name in self._columns:  # (output-dtype columns: no name to test again)
            if i < len(cells):
                cell = cells[i].strip()
                if cell and cell not in ("-", "None", "nan"):
                    record_dtype(self.seen, cell, f"output line {lineno}: column '{name}'")

    def pairs(self, lineno: int, pairs: Iterable[tuple[str, str]]) -> None:
        """The ``key=value``/``key: value`` pairs of a checked shape."""
        for key, value in pairs:
            if is_output_dtype_name(key):
                record_dtype(self.seen, value, f"output line {lineno}: {key}=")

    def calling(self, lineno: int, text: str) -> None:
        """aiter's ``calling test_x(dtype = torch.bfloat16,`` (its first argument is on this line)."""
        match = _CALLING.match(text)
        if match is not None and is_output_dtype_name(match["key"]):
            record_dtype(self.seen, match["value"], f"output line {lineno}: argument '{match['key']}'")


def dtype_from_command(command: str | None) -> tuple[str, str] | None:
    """The dtype the command's ``-d``/``--dtype`` (or ``--otype``...) arguments name, and the
    arguments as written; a low-precision one among several (``-d bf16 fp8``) wins."""
    if not command:
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    found: list[tuple[str, str]] = []
    for i, word in enumerate(words):
        flag, _, attached = word.partition("=")
        if flag not in DTYPE_FLAGS:
            continue
        values = [attached] if attached else []
        for value in words[i + 1 :] if not attached else ():
            if value.startswith("-"):
                break
            values.append(value)
        shown = f"command: {flag} {' '.join(values)}"
        found += [(part, shown) for value in values for part in value.split(",") if part]
    return _pick(found)


def record_dtype(seen: list[tuple[str, str]], dtype: str, where: str) -> None:
    """Keep a printed output dtype: each value once, the first few, and every low-precision one."""
    dtype = dtype.strip().strip(",;")
    if not dtype or any(d == dtype for d, _ in seen):
        return
    if len(seen) < SEEN_CAP or is_low_precision(dtype):
        seen.append((dtype, where))


def resolve_dtype(declared: str | None, command: str | None, seen: list[tuple[str, str]]) -> tuple[str, str] | None:
    """``(dtype, source)``: the first low-precision dtype of the sources in order, else the first one."""
    sources = [(declared, "declaration")] if declared else []
    from_command = dtype_from_command(command)
    if from_command:
        sources.append(from_command)
    return _pick(sources + list(seen))


def _pick(found: list[tuple[str, str]]) -> tuple[str, str] | None:
    return next((f for f in found if is_low_precision(f[0])), found[0] if found else None)
