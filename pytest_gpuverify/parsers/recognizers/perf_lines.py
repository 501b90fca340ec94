"""Figures a line prints with their units, in every kind: each such line one perf row.

- **Serving throughput** (vLLM ``bench throughput``/``serve``, sglang): ``Throughput: 12.34 requests/s,
  4567.89 total tokens/s``, ``Output token throughput (tok/s):   1234.56``, any ``<label>: X tok/s``:
  one row of shape ``throughput`` whose ``metrics`` hold the numbers (``req/s``, ``total tok/s``...).
- **A measured statement**: a time with its unit beside a throughput (``Perf: 1.23 ms, 110.5 TFlops,
  300.2 GB/s, DeviceGemmXdl<...>``, ckProfiler's ``Best Perf: ...``), a time under a label that says
  it is one (``Total time: 0.35ms``, ``Kernel avg time: 0.0456 ms``), or a throughput alone
  (``Rate: 2841.49 inferences/sec``, ``Achieved: 812 GB/s``): its row named by the label, its first
  time in µs (``stat`` from the label: ``avg`` a mean, ``best`` a minimum), the other figures in its
  ``metrics`` by unit, its shape what the line says after its figures (ckProfiler's instance).
  A line another recognizer already made rows of is not read again; a time that is not one
  (negative) keeps its row with a null value and a note; ``nan`` where a figure was due is a failure.
"""

from __future__ import annotations

import math
import re

from pytest_gpuverify.parsers.perfstats import TO_US, place, to_us
from pytest_gpuverify.parsers.reading.fold import TriggerSpec
from pytest_gpuverify.parsers.reading.line import Line
from pytest_gpuverify.parsers.reading.lines import NUMBER, read_number
from pytest_gpuverify.parsers.registry import FORMATS, RecognizerBase
from pytest_gpuverify.records.artifact import PerfRow

SHAPE = "throughput"  # the shape of a serving throughput row

_N = r"([-+]?(?:\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|nan|inf))"
_VLLM = re.compile(
    rf"^\s*Throughput:\s*{_N}\s*requests/s,\s*{_N}\s*(total )?tokens/s(?:,\s*{_N}\s*output tokens/s)?", re.I
)
_SERVE = re.compile(
    rf"^\s*(?P<label>[A-Za-z][A-Za-z ]*?)\s*throughput\s*\((?P<unit>req|tok)/s\):\s*(?P<v>{_N[1:-1]})\s*$", re.I
)
_TOKS = re.compile(rf"(?P<label>[A-Za-z][\w -]*?)?\s*[:=]\s*(?P<v>{_N[1:-1]})\s*(?:tok|tokens?)/s\b", re.I)

_TIME_UNITS = {
    "us": "us",
    "µs": "us",
    "usec": "us",
    "ms": "ms",
    "msec": "ms",
    "ns": "ns",
    "s": "s",
    "sec": "s",
    "secs": "s",
    "seconds": "s",
}
_FIGURE = re.compile(
    rf"(?<![\w.])(?P<v>{NUMBER})\s*(?P<u>us|µs|usec|ms|msec|ns|secs?|seconds|s|[tgmk]?flops?|[tgmk]?b/s|gbps"
    r"|[a-z]+/s(?:ec)?)(?![\w/])",
    re.I,
)
_PERF_WORD = re.compile(
    r"\b(?:perf|time|latency|elapsed|duration|runtime|avg|average|mean|median|best|kernel|bandwidth"
    r"|throughput|rate|speed)\b",
    re.I,
)
_NOT_PERF = re.compile(
    r"\b(?:build|built|compil\w*|jit|load\w*|import\w*|download\w*|install\w*|cost|eta|remaining"
    r"|timeout|took|wait\w*|sleep\w*|startup|setup)\b",
    re.I,
)
_UNIT_GATE = re.compile(r"(?:\d|nan|inf)\s*(?:[uµmn]?s|sec|[a-z]*flop|[a-z]+/s)", re.I)  # what _FIGURE needs, fast
_STAT = (
    ("min", re.compile(r"\b(?:best|min(?:imum)?|fastest)\b", re.I)),
    ("max", re.compile(r"\b(?:max(?:imum)?|worst|slowest)\b", re.I)),
    ("mean", re.compile(r"\b(?:avg|average|mean)\b", re.I)),
    ("median", re.compile(r"\b(?:median|p50)\b", re.I)),
)
_SECOND_UNITS = ("s", "sec", "secs", "seconds")
_AFTER_LABEL = re.compile(r"[:=]\s*$")  # a time in seconds right after its label
# ``Benchmark duration (s):   339.37``, ``P99 ITL (ms):  127.23`` (a serving benchmark's result block)
_LABELLED = re.compile(
    rf"^\s*(?P<label>[A-Za-z][^:()\n]{{0,80}}?)\s*\((?P<u>us|µs|usec|ms|ns|s|sec|secs|seconds"
    rf"|[tgmk]?flops|[tgmk]?b/s)\)\s*:\s*(?P<v>{NUMBER})\s*$",
    re.I,
)
# A number and a unit (``1.2 ms``, ``110 TFlops``, ``300 GB/s``, ``12 tok/s``, ``2841 inferences/sec``; µs is
# two non-ASCII bytes), a serving throughput's ``tok/s``/``req/s``, a ``(ms):`` label. (Seconds only
# right after a ``:``/``=``: ``Total time: 3.2 s``; ``cost 39.6s`` is a build's.) The ``re`` spelling
# starts each expression with a literal and looks back from it: ``re`` scans fast only for a literal.
_UNIT = rb"(?:us|usec|ms|msec|ns|[tgmk]?flops?|[a-z]+/s(?:ec)?)"
_SECONDS = rb"(?:s|secs?|seconds)"
_HS_UNITS = (rb"(?:us|usec|ms|msec|ns|[tgmk]?flops?)", rb"[a-z]+/s(?:ec)?")
_RE_LINE = (
    *(
        unit + b"(?:" + b"|".join(rb"(?<=[\d.]" + b" " * n + unit + b")" for n in range(9)) + rb")(?![a-z0-9_/])"
        for unit in (b"us", b"ms", b"ns")
    ),
    rb"sec(?<=[umn]sec)",
    b"flop",
    rb"(?:nan|inf) *+[a-z]",
    b"\x80s",
    rb"/s(?<!it/s)(?![a-z0-9_])",
    b"/sec",
    rb":[ \x80]*+[-+]?[\d.]++ *+" + _SECONDS + rb"(?![a-z0-9_/])",
    rb"\x80\x80s(?![a-z0-9_/])",
    rb"\)[ \x80]*:",
)
TRIGGERS = TriggerSpec(
    line=lambda ascii_only: _RE_LINE,
    raw=(rb"\xc2\xb5s",),
    name="perf-lines",
    # (the ``X/s`` units apart: one alternation with ``[a-z]+`` costs Hyperscan three times the two)
    hs=lambda k: (
        *(rb"(?:[0-9.]|nan|inf)" + k.spu + b"*" + unit + rb"(?:[^a-z0-9_/]|$)" for unit in _HS_UNITS),
        rb"\)" + k.spu + b"*[:=]",
        b"[:=]" + k.spu + rb"*[-+]?[0-9.]+" + k.spu + b"*" + _SECONDS + rb"(?:[^a-z0-9_/]|$)",
        rb"\xc2\xb5s",
        b"tok/s",
        b"req/s",
    ),
)


def read_throughput(lineno: int, line: str) -> PerfRow | None:
    """A serving benchmark's throughput line as a row of shape ``throughput`` (None: not one)."""
    low = line.lower()
    if "/s" not in low or ("tok" not in low and "req" not in low):  # tqdm's ``it/s`` is no throughput line
        return None
    m = _VLLM.match(line)
    if m:
        metrics = {"req/s": _value(m[1]), ("total tok/s" if m[3] or m[4] else "tok/s"): _value(m[2])}
        if m[4]:
            metrics["output tok/s"] = _value(m[4])
        return PerfRow(shape=SHAPE, name="Throughput", metrics=metrics, source_line=lineno)
    m = _SERVE.match(line)
    if m:
        label = _label(m["label"])
        unit = "req/s" if m["unit"].lower() == "req" else f"{label} tok/s".strip()
        name = f"{unit}" if m["unit"].lower() == "tok" else (f"{label} req/s" if label != "request" else "req/s")
        return PerfRow(shape=SHAPE, name=name, metrics={name: _value(m["v"])}, source_line=lineno)
    m = _TOKS.search(line)
    if m:
        name = f"{_label(m['label'] or '')} tok/s".strip()
        return PerfRow(shape=SHAPE, name=name, metrics={name: _value(m["v"])}, source_line=lineno)
    return None


def _label(words: str) -> str:
    words = re.sub(r"\b(?:throughput|token|tokens)\b", " ", words.lower())
    return " ".join(words.replace("_", " ").split())


def _value(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


class PerfLines(RecognizerBase):
    name = "perf-lines"
    stage = FORMATS
    triggers = TRIGGERS

    def feed(self, line: Line) -> None:
        if line.owned:
            return
        text = line.text
        if line.figures_read:
            return  # another recognizer read this line's figures
        if "/s" in text:
            row = read_throughput(line.lineno, text)
            if row is not None:
                self._nan_figures(line.lineno, row)
                self.ev.add_perf(row)
                return
        if "):" in text and (labelled := _LABELLED.match(text)) is not None:
            self._labelled(line.lineno, labelled)
        elif _UNIT_GATE.search(text) is not None:
            self._statement(line.lineno, text)

    def _labelled(self, lineno: int, match: re.Match[str]) -> None:
        """``Mean TTFT (ms):   26.56``: a figure whose unit its label names."""
        label, unit = " ".join(match["label"].split()), match["u"]
        stat = next((name for name, rx in _STAT if rx.search(label)), None)
        timed = unit.lower() in _TIME_UNITS
        # a time is kept in us: the row's name says so (``Mean TTFT (us)``), never the unit it was printed in
        row = PerfRow(shape="", name=f"{label} ({'us' if timed else unit})", stat=stat, source_line=lineno)
        if timed:
            value = self._time(lineno, match, label)
            place(row, stat, value)
        else:
            kind, value = read_number(match["v"])
            if kind in ("nan", "inf"):
                self.ev.nan_count += 1
                self.ev.fail(f"line {lineno}: {kind} in '{label}'")
                value = None
            row.metrics[unit] = value
        self.ev.add_perf(row)

    def _statement(self, lineno: int, text: str) -> None:
        figures = [
            f
            for f in _FIGURE.finditer(text)
            if f["u"].lower() not in ("it/s", "s/it")  # tqdm's
            and (f["u"].lower() not in _SECOND_UNITS or _AFTER_LABEL.search(text, 0, f.start()))
        ]
        if not figures:
            return
        times = [f for f in figures if f["u"].lower() in _TIME_UNITS]
        rates = [f for f in figures if f["u"].lower() not in _TIME_UNITS]
        label_text = text[: figures[0].start()]
        if _NOT_PERF.search(label_text):
            return  # ``finish build ..., cost 39.6s``: the tooling's time, not the kernel's
        if not rates and not _PERF_WORD.search(label_text):
            return
        label = " ".join(label_text.strip().rstrip(":=,;|-").split()).strip("[]() ")[:80] or "figure"
        stat = next((name for name, rx in _STAT if rx.search(label_text)), None)
        shape = " ".join(text[figures[-1].end() :].strip(" ,;:|").split())[:200]
        row = PerfRow(shape=shape, name=label, stat=stat, source_line=lineno)
        if times:
            first = times[0]
            value = self._time(lineno, first, label)
            place(row, stat, value)
        for figure in rates + times[1:]:
            kind, value = read_number(figure["v"])
            if kind in ("nan", "inf"):
                self.ev.nan_count += 1
                self.ev.fail(f"line {lineno}: {kind} {figure['u']} in '{label}'")
                value = None
            row.metrics.setdefault(figure["u"], value)
        self.ev.add_perf(row)

    def _time(self, lineno: int, figure: re.Match[str], label: str) -> float | None:
        kind, value = read_number(figure["v"])
        unit = _TIME_UNITS[figure["u"].lower()]
        if kind in ("nan", "inf"):
            self.ev.nan_count += 1
            self.ev.fail(f"line {lineno}: {kind} in '{label}' time")
            return None
        if value is None or value < 0:
            self.ev.note(f"line {lineno}: '{label}' printed a negative time ({figure.group()}); kept as null")
            return None
        return to_us(figure["v"], TO_US[unit]) if unit != "us" else value

    def _nan_figures(self, lineno: int, row: PerfRow) -> None:
        for name, value in row.metrics.items():
            if value is None:
                self.ev.nan_count += 1
                self.ev.fail(f"line {lineno}: nan in '{name}'")


RECOGNIZERS = (PerfLines,)
