"""What a table's column holds, from its header name, classified once per table: the one
vocabulary every table layout is read with (aiter's ``ret[...]`` names, Triton's perf_report lines,
FlyDSL's, tritonbench's, FlagGems', hipBLASLt's and rocBLAS' CSV, Tensile's).

Classes, the first that matches a name wins:

- ``runs``: a timing's count (``runs``, ``iters``): the row's ``runs``, not part of its shape;
- ``side``: the A/B side of the row;
- ``status``: a run's or a check's status (``Status``, ``result``, ``outcome``): ``FAILED`` fails;
- ``correct``: a check's verdict (``correctness``, ``validation``, ``match``, ``allclose``): pass or fail;
- ``accuracy``: tritonbench's ``<impl>-accuracy`` (1 or 0 per row), or a percentage (a figure);
- ``throughput``: TFLOPS, GB/s, tok/s, bandwidth: a figure of the time it belongs to, or its own row;
- ``time``: a time with its unit (``us``, ``ck us``, ``Torch Latency (ms)``, ``time-us``, ``Time_(ms)``,
  test_quant's ``dq``/``sq``): one perf row per measured quantity, in µs;
- ``wrong``: a count of wrong values or failures (rccl-tests' ``#wrong``): none passes, any fails;
- ``err``: aiter's mismatch ratio (``err``, ``ck err``, ``logits_diff``): above the tolerance (0.05, or
  the declared ``err_ratio_max``) a failed check;
- ``error``: an error figure (``max_diff``, ``norm_error``, ``maxerr``, ``rel_err``): a check where the
  row has a ``tolerance`` (``atol``, ``tol``), else a measure (the largest is kept);
- ``tolerance``; ``ratio`` (``speedup``, ``uplift``, ``FlyDSL/HIP``: a row's figure, never its shape);
- ``measure``: cosine similarity, SNR (the worst is kept);
- ``ignore`` (``mre``, ``nan_leak``); ``elided`` (pandas' ``...``);
- anything else is part of the row's shape (``M``, ``dtype``, ``Size Detail``), or, in a perf_report
  table, a line (a figure whose unit only the title knows: the tables recognizer decides).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

from pytest_gpuverify.parsers.perfstats import RUNS, TO_US, ColumnGroup, group_columns, time_stat, unit_of
from pytest_gpuverify.parsers.reading.tables import is_ellipsis

_B = r"(?:^|[\s_:(\-])"  # a word's start inside a column name
_E = r"(?=$|[\s_)\-(:])"
COLUMN_CLASSES = [
    ("runs", RUNS),
    ("status", re.compile(rf"{_B}(?:status|state|outcome|verdict|results?){_E}", re.I)),
    (
        "correct",
        re.compile(
            rf"{_B}(?:correct(?:ness)?|valid(?:ation|ated)?|verif(?:y|ied|ication)?|checked"
            rf"|pass(?:ed)?|pass/fail|match(?:es|ed)?|all_?close|is_?close|identical){_E}",
            re.I,
        ),
    ),
    ("accuracy", re.compile(rf"{_B}(?:accuracy|acc){_E}", re.I)),
    (
        "throughput",
        re.compile(
            r"[tgmk]?flops|[tgmk]?b/s|gb_per_sec|gbps|(?:tok|tokens?|req|samples?)/s|bandwidth"
            r"|(?:^|[\s_:\-])bw(?:$|[\s_(\-])",
            re.I,
        ),
    ),
    # test_quant's ``ck dq``/``ck sq`` are us; ms, ns and s are converted to us (perfstats.unit_of)
    (
        "time",
        re.compile(
            rf"{_B}(?:us|µs|usec|ms|ns|sec|secs|seconds|s){_E}|{_B}(?:us|ms|ns)$|(?:^|[ _])[ds]q$"
            r"|\((?:us|µs|ms|ns|s)\)",
            re.I,
        ),
    ),
    ("line", re.compile(rf"{_B}(?:time|latency|duration|elapsed|runtime){_E}", re.I)),  # a time, unit unknown
    ("wrong", re.compile(r"(?:^|[\s_#])(?:wrong|failures|failed|mismatches|num_?errors|n_?errors)$", re.I)),  # counts
    ("err", re.compile(r"(?:^|[ _:])err(?:$|[ _(])|logits_diff", re.I)),
    ("tolerance", re.compile(rf"{_B}(?:[ar]?tol|tolerance|threshold){_E}", re.I)),
    ("error", re.compile(r"error|errors|max_?diff|max_?delta|maxerr|max_?err|abs_?err|rel_?err|mismatch", re.I)),
    ("measure", re.compile(rf"{_B}(?:cos(?:ine)?(?:[ _]?sim(?:ilarity)?)?|min_?cos|mincos|snr(?:[ _]?db)?){_E}", re.I)),
    # Ratios and other verdict-like columns vary per run; keeping them out of the shape lets two
    # runs of the same shape compare.
    ("ratio", re.compile(r"uplift|speedup|ratio|gain|(?:^|\s)vs(?:\s|$)|^[\w ().]+/[\w ().]+$", re.I)),
    ("ignore", re.compile(r"(?:^|[ _])(?:mre|leak)(?:$|[ _(])|^index$|^unnamed", re.I)),
]
METRIC_WORD = re.compile(
    r"[tgmk]?flops|[tgmk]?b/s|gb_per_sec|gbps|tok/s|(^|[ _:])bw(?=$|[ _(])|throughput|bandwidth|[()]", re.I
)
# an error figure named like a correctness measure (measures.py's fields)
ERROR_FIELDS = (("max_abs_error", re.compile(r"max|maxerr|abs", re.I)),)
MEASURE_FIELDS = (("cosine_sim", re.compile(r"cos", re.I)), ("snr_db", re.compile(r"snr", re.I)))
TIME_UNIT = re.compile(r"(?:^|[\s_:(\-])(us|µs|usec|ms|ns|s|sec|secs|seconds)(?=$|[\s_)\-])|\((us|µs|ms|ns|s)\)", re.I)


def provider_of(name: str, word: re.Pattern[str]) -> str:
    """``ck TFLOPS`` -> ``ck``, ``triton_us`` -> ``triton``, ``us`` -> ``""``."""
    text = word.sub(" ", name)
    return " ".join(
        text.replace("_", " ").replace(":", " ").replace("(", " ").replace(")", " ").replace("-", " ").split()
    ).lower()


_LATENCY = re.compile(r"\b(?:latency|duration|elapsed)\b", re.I)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def classify(name: str) -> str | None:
    """The class of a column named ``name``, or None (shape or line: the table decides)."""
    if not name:
        return "ignore"
    if is_ellipsis(name):
        return "elided"
    if name.strip().lower() == "side":
        return "side"
    stripped = _CAMEL.sub(" ", name.strip())  # ``timeMs``, ``bytesRead``
    return next((kind for kind, rx in COLUMN_CLASSES if rx.search(stripped)), None)


def time_unit(name: str) -> str | None:
    """A time column's unit, named in it (``ms``, ``us``...); test_quant's ``dq``/``sq`` are us."""
    found = TIME_UNIT.search(name)
    if found is None:
        return "us" if re.search(r"(?:^|[ _])[ds]q$", name) else None
    unit = (found.group(1) or found.group(2)).lower()
    return {"µs": "us", "usec": "us", "sec": "s", "secs": "s", "seconds": "s"}.get(unit, unit)


def named_in_us(name: str) -> str:
    """A time column's name once its values are converted to microseconds: the unit it names says us
    (``fused (Execution Time (ms))`` -> ``fused (Execution Time (us))``, ``time_ms`` -> ``time_us``), so a
    row's name never names another unit than the one its figures are in."""
    found = TIME_UNIT.search(name)
    if found is None:
        return name
    group = 1 if found.group(1) is not None else 2
    return name[: found.start(group)] + "us" + name[found.end(group) :]


@dataclass
class Column:
    name: str
    kind: str  # a class above, "shape", or "line"
    metrics: list[int] = field(default_factory=list)  # for a time column: its throughput columns
    unit: str | None = None  # a time's unit where its table's title names it


def classify_columns(names: list[str], unclassified: str = "shape") -> list[Column]:
    """Every column's class; the unclassified ones are ``unclassified``; each throughput column goes to
    the time column of its provider (``ck TFLOPS`` to ``ck us``), or to the only time column."""
    cols = [Column(name, classify(name) or unclassified) for name in names]
    times = [i for i, c in enumerate(cols) if c.kind == "time"]
    # ``ck us`` -> ck, ``mean_us`` -> "", ``Torch Latency (ms)`` -> torch
    time_providers = {i: provider_of(time_stat(cols[i].name)[0], _LATENCY) for i in times}  # ``CPU-us`` -> cpu
    unnamed = [i for i in times if not time_providers[i]]
    for j, col in enumerate(cols):
        if col.kind != "throughput":
            continue
        provider = provider_of(col.name, METRIC_WORD)
        owners = [i for i in times if time_providers[i] == provider][:1]
        if not owners and len(set(time_providers.values())) == 1:
            owners = times[:1]  # ``TFLOPS`` next to the only measured time belongs to it
        elif not owners and provider and len(unnamed) == 1:
            owners = unnamed  # hipBLASLt's ``hipblaslt-Gflops`` is its ``us``'s (``CPU-Gflops`` is ``CPU-us``'s)
        for i in owners:
            cols[i].metrics.append(j)
    return cols


@dataclass
class Table:
    """An open table: its header, its columns' classes, and how a row's cells are read."""

    header_line: int
    columns: list[Column]
    wrapped: bool = False
    title: str | None = None  # the title printed over it: part of each row's key
    layout: str = ""
    header_text: str = ""  # a split table's header as printed (its units' line is read against it)
    single_names: list[str] = field(default_factory=list)  # its names if they are one space apart
    rows: int = 0
    elided_rows_seen: bool = False
    cut_reported: bool = False
    config: str | None = None  # a run's settings printed just above it (``causal=True``): a repeat's name
    perf: list = field(default_factory=list, repr=False)  # the perf rows read from it, named again if repeated
    _plan: RowPlan | None = field(default=None, repr=False)

    def plan(self) -> RowPlan:
        """Which cells of a row to read, worked out once for the table's rows."""
        if self._plan is None:
            cols = self.columns
            owned = {j for c in cols for j in c.metrics}
            self._plan = RowPlan(
                shape=[(i, c.name) for i, c in enumerate(cols) if c.kind == "shape"],
                ratios=[(i, c.name) for i, c in enumerate(cols) if c.kind == "ratio"],
                times=[(i, c, [(j, cols[j].name) for j in c.metrics]) for i, c in enumerate(cols) if c.kind == "time"],
                figures=[
                    (i, c.name)
                    for i, c in enumerate(cols)
                    if (c.kind == "throughput" and i not in owned) or c.kind == "line"
                ],
                checks=[
                    (i, c) for i, c in enumerate(cols) if c.kind in ("status", "correct", "accuracy", "err", "wrong")
                ],
                errors=[(i, c) for i, c in enumerate(cols) if c.kind in ("error", "measure")],
                tolerance=[i for i, c in enumerate(cols) if c.kind == "tolerance"],
                runs=[i for i, c in enumerate(cols) if c.kind == "runs"],
                sides=[i for i, c in enumerate(cols) if c.kind == "side"],
                groups=group_columns([(i, c.name) for i, c in enumerate(cols) if c.kind == "time"]),
                scale=[_scale(c) for c in cols],
            )
        return self._plan


def _scale(col: Column) -> Decimal | None:
    if col.kind != "time":
        return None
    unit = col.unit or time_unit(col.name) or unit_of(col.name)
    return TO_US.get(unit)


@dataclass
class RowPlan:
    shape: list[tuple[int, str]]  # (cell index, column name), in column order
    ratios: list[tuple[int, str]]
    times: list[tuple[int, Column, list[tuple[int, str]]]]  # time columns, each with its throughput columns
    figures: list[tuple[int, str]]  # figures of their own: unowned throughputs, perf_report lines
    checks: list[tuple[int, Column]]  # status, correctness, accuracy and err cells
    errors: list[tuple[int, Column]]  # error figures and measures
    tolerance: list[int]
    runs: list[int]
    sides: list[int]
    groups: list[ColumnGroup]  # the time columns, one group per measured quantity
    scale: list[Decimal | None]  # per column: ms/ns/s -> us, None for us
