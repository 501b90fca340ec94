"""A FlyDSL ``tests/kernels`` pytest run's own lines.

The outcomes come from the inner pytest (:mod:`.pytest_terminal`: JUnit XML, else the terminal). On top,
the tests' own ``print()`` one-liners, which ``-rA`` shows under each test's section:

- ``[flyc] Throughput: {us:.1f} us, {tflops:.2f} TFLOPS, BW: {tbps:.3f} TB/s`` (also ``[flyc] W4A6``/
  ``A8W8`` prefixes, and ``Aiter Throughput: ... GB/s``): a row named ``flyc`` / ``flyc W4A6`` / ``Aiter``
- ``Kernel avg time: {ms:.4f} ms``: a row named ``Kernel avg time``, the printed ms times 1000, ``mean``;
  the test's FIRST ``Bandwidth: X GB/s`` goes in its metrics (FlyDSL issue #655: later ones are
  other variants)
- ``FlyDSL MoE stage1[...]: X us, Y TFLOPS(...), Z TB/s`` and ``stage2 ... | shape | X us, ...``
- ``[Perf] FlyDSL rmsnorm gpu: X us``, MLA ``cos_diff=... TFLOPS=... TB/s=...`` lines, flash-attn
  ``| PASS | maxerr mincos | time_us tflops`` rows (each a check inside its test)
- ``✓ Check passed`` / ``✗ Check failed`` (``verify_output``), a bare ``PASSED``/``FAILED`` line and
  ``ALL TESTS PASSED``/``N TESTS FAILED`` are statements, read for every kind (statements.py); its
  tables (``Perf Compare (gpu us)``) are tables (tables.py)

A row's shape is the test id of its ``-rA`` section (``test_x[bf16-128]``) and/or the preceding
``Testing RMSNorm (M=..., N=..., dtype=...)`` line. Measures (``Max absolute error``, ``cos=``,
``Logits Diff``) are read by the measures (measures.py).
"""

from __future__ import annotations

import re
from decimal import Decimal

from pytest_gpuverify.config.targets import FLYDSL_PYTEST
from pytest_gpuverify.parsers.evidence import Evidence
from pytest_gpuverify.parsers.perfstats import place, to_us
from pytest_gpuverify.parsers.reading.fold import TriggerSpec, hs_key_value, key_value
from pytest_gpuverify.parsers.reading.line import Line
from pytest_gpuverify.parsers.reading.lines import NUMBER, read_number
from pytest_gpuverify.parsers.registry import FORMATS, RecognizerBase
from pytest_gpuverify.parsers.result import ParseContext
from pytest_gpuverify.records.artifact import PerfRow

_THROUGHPUT = re.compile(
    rf"^(?:\[(?P<tag>[\w.-]+)\]\s*)?(?P<who>[\w.+-]+(?: [\w.+-]+)*?)?\s*Throughput:\s*(?P<us>{NUMBER})\s*us"
    rf"(?:,\s*(?P<tflops>{NUMBER})\s*TFLOPS)?(?:,\s*BW:\s*(?P<bw>{NUMBER})\s*(?P<unit>[TGM]B/s))?"
)
_KERNEL_AVG = re.compile(rf"Kernel avg time:\s*(?P<ms>{NUMBER})\s*ms")
_BANDWIDTH = re.compile(rf"^Bandwidth:\s*(?P<v>{NUMBER})\s*(?P<unit>[TGM]B/s)")
_MOE = re.compile(
    rf"^(?P<who>FlyDSL MoE [^:|]*?)\s*(?::|\|(?P<mid>[^|]*)\|)\s*(?P<us>{NUMBER})\s*us,\s*(?P<tflops>{NUMBER})\s*TFLOPS"
    rf"(?:\([^)]*\))?,\s*(?P<tbps>{NUMBER})\s*TB/s"
)
_PERF_TAG = re.compile(rf"^\[Perf\]\s*(?P<who>.+?):\s*(?P<us>{NUMBER})\s*us\b")
_KV_METRIC = re.compile(rf"(?<![\w/])(?P<k>TFLOPS|TB/s|GB/s|us_p50)=\s*(?P<v>{NUMBER})")
_FA_ROW = re.compile(
    rf"\|\s*(?P<st>PASS|FAIL)\s*\|\s*(?P<err>{NUMBER})\s+(?P<cos>{NUMBER})\s*\|\s*(?P<us>{NUMBER})\s+(?P<tflops>{NUMBER})\s*$"
)
_TESTING = re.compile(r"^Testing (?P<what>\S.*?)\s*(?:\.{2,})?$")
_ATOL = re.compile(rf"\(atol=(?P<v>{NUMBER})")


# FlydslLines reads ``Throughput: X us`` and ``[Perf] who: X us`` (timings), ``Kernel avg time: X ms``,
# ``Bandwidth: X GB/s``, ``TFLOPS=``/``TB/s=``/``GB/s=``/``us_p50=`` values (names ending ime, dth,
# ops, b/s, p50: reading/fold.NAME_ENDS), ``(atol=`` -> key_value; lines starting (spaces aside) ``FlyDSL MoE``, ``Testing ``
# -> line starts; ``| PASS |``/``| FAIL |`` anywhere.
_OWN = (b"flydsl moe", b"testing ")
TRIGGERS = TriggerSpec(
    line=lambda ascii_only: (key_value(ascii_only), rb"\| (?:pass|fail) \|"),
    line_start=(*_OWN, rb"[ \x80]+(?:flydsl moe|testing )"),
    hs=lambda k: (*hs_key_value(k), rb"\|" + k.sp + b"(?:pass|fail)" + k.sp + rb"\|"),
    hs_line_start=lambda k: (
        k.words(b"flydsl moe"),
        k.words(b"testing "),
        k.spu + b"+" + b"(?:" + k.words(b"flydsl moe") + b"|" + k.words(b"testing ") + b")",
    ),
    name="flydsl",
)


class FlydslLines(RecognizerBase):
    name = "flydsl"
    stage = FORMATS
    kinds = frozenset((FLYDSL_PYTEST,))
    triggers = TRIGGERS

    def __init__(self, context: ParseContext, ev: Evidence) -> None:
        super().__init__(context, ev)
        self.test: str | None = None
        self.testing: str | None = None
        self.time_row: PerfRow | None = None
        self.bandwidth_taken = False
        self.bandwidth_noted = False
        self.read_figures = False  # the line's figures went into a row made before

    def shape(self) -> str:
        return ": ".join(p for p in (self.test, self.testing) if p)

    def feed(self, line: Line) -> None:
        if line.owned:
            return
        if line.test != self.test:  # a new test's section: a new context
            self.test, self.testing, self.time_row, self.bandwidth_taken = line.test, None, None, False
        lineno, s = line.lineno, line.text.strip()
        if not s:
            return
        rows = len(self.ev.out.perf)
        self._read(lineno, s)
        if len(self.ev.out.perf) > rows or self.read_figures:
            line.figures_read = True

    def _read(self, lineno: int, s: str) -> None:
        self.read_figures = False
        c0 = s[0]
        if ":" in s:  # single-character tests first: most lines are none of these
            if "Throughput:" in s:
                self.throughput(lineno, s)
            elif "Kernel avg time:" in s:
                self.kernel_avg(lineno, s)
            elif c0 == "B" and s.startswith("Bandwidth:"):
                self.bandwidth(lineno, s)
            elif c0 == "[" and s.startswith("[Perf]"):
                match = _PERF_TAG.match(s)
                if match:
                    self.timing(lineno, match["who"], match["us"], self.shape(), {})
            if "Max absolute error" in s and (match := _ATOL.search(s)):
                kind, value = read_number(match["v"])
                if kind == "num":
                    self.ev.widest("atol", value)
        if c0 == "F" and s.startswith("FlyDSL MoE"):
            match = _MOE.match(s)
            if match:
                shape = " ".join(match["mid"].split()) if match["mid"] else self.shape()
                self.timing(
                    lineno, match["who"], match["us"], shape, {"TFLOPS": match["tflops"], "TB/s": match["tbps"]}
                )
        elif c0 == "T" and s.startswith("Testing "):
            match = _TESTING.match(s)
            if match:
                self.testing, self.time_row, self.bandwidth_taken = match["what"], None, False
        elif "|" in s and ("| PASS |" in s or "| FAIL |" in s):
            self.flash_attn_row(lineno, s)
        elif "=" in s and ("TFLOPS=" in s or "TB/s=" in s):
            self.key_values(lineno, s)

    def timing(
        self,
        lineno: int,
        who: str,
        us: str,
        shape: str,
        metrics: dict[str, str | None],
        stat: str | None = None,
        us_value: float | None = None,
    ) -> PerfRow | None:
        kind, value = read_number(us)
        if us_value is not None:
            value = us_value
        if kind in ("nan", "inf"):
            self.ev.nan_count += 1
            self.ev.fail(f"line {lineno}: {kind} in '{who}' timing")
        elif kind != "num":
            return None
        numbers = {k: read_number(v)[1] for k, v in metrics.items() if v is not None}
        for k, v in metrics.items():  # a NaN throughput beside a real time: a measured figure gone wrong
            if kind == "num" and v is not None and read_number(v)[0] in ("nan", "inf"):
                self.ev.nan_count += 1
                self.ev.fail(f"line {lineno}: {v} {k} in '{who}' timing")
        row = PerfRow(shape=shape, name=who, stat=stat, metrics=numbers, source_line=lineno)
        place(row, stat, value)
        self.ev.add_perf(row)
        return row

    def throughput(self, lineno: int, s: str) -> None:
        match = _THROUGHPUT.match(s)
        if match is None:
            return
        who = " ".join(p for p in (match["tag"], match["who"]) if p) or "Throughput"
        metrics = {"TFLOPS": match["tflops"]}
        if match["bw"]:
            metrics[match["unit"]] = match["bw"]
        self.timing(lineno, who, match["us"], self.shape(), metrics)

    def kernel_avg(self, lineno: int, s: str) -> None:
        match = _KERNEL_AVG.search(s)
        if match is None:
            return
        kind, _ = read_number(match["ms"])
        us = to_us(match["ms"], Decimal(1000)) if kind == "num" else None
        self.time_row = self.timing(lineno, "Kernel avg time", match["ms"], self.shape(), {}, "mean", us)

    def bandwidth(self, lineno: int, s: str) -> None:
        match = _BANDWIDTH.match(s)
        if match is None:
            return
        self.read_figures = True
        if self.bandwidth_taken:
            if not self.bandwidth_noted:
                self.bandwidth_noted = True
                self.ev.note(
                    f"line {lineno}: another 'Bandwidth:' line in the same test; only the first is kept "
                    "(FlyDSL issue #655)"
                )
            return
        self.bandwidth_taken = True
        kind, value = read_number(match["v"])
        if kind != "num":
            self.ev.nan_count += 1
            self.ev.fail(f"line {lineno}: bandwidth is {match['v']}")
            return
        if self.time_row is not None:
            self.time_row.metrics[match["unit"]] = value
        else:
            self.ev.add_perf(
                PerfRow(shape=self.shape(), name="Bandwidth", metrics={match["unit"]: value}, source_line=lineno)
            )

    def flash_attn_row(self, lineno: int, s: str) -> None:
        match = _FA_ROW.search(s)
        if match is None:
            return
        config = " ".join(s[: match.start()].replace("|", " ").split()) or self.shape()
        failed = match["st"] != "PASS"
        self.ev.mark(lineno, failed)
        self.ev.count(passed=int(not failed), failed=int(failed), decisive=False)
        if failed:
            self.ev.fail(f"line {lineno}: FAIL ({config})")
        self.ev.metrics.take(lineno, "max_abs_error", match["err"])
        self.ev.metrics.take(lineno, "cosine_sim", match["cos"])
        self.timing(lineno, "time_us", match["us"], config, {"TFLOPS": match["tflops"]})

    def key_values(self, lineno: int, s: str) -> None:
        found = {m["k"]: m["v"] for m in _KV_METRIC.finditer(s)}
        if not found:
            return
        label = s.split(":", 1)[0].strip() if ":" in s.split("=", 1)[0] else ""
        us = found.pop("us_p50", None)
        if us is not None:
            self.timing(lineno, label or "us_p50", us, self.shape(), dict(found), "median")
            return
        numbers = {k: read_number(v)[1] for k, v in found.items()}
        self.ev.add_perf(PerfRow(shape=self.shape(), name=label or "FlyDSL", metrics=numbers, source_line=lineno))


RECOGNIZERS = (FlydslLines,)
