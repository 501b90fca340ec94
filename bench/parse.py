"""Parsing throughput and memory on a huge output, against ``grep -c`` over the same file, in one run.

Writes a SIZE MB output in a temp dir (realistic noise: JIT builds, warnings, profiler lines, long
kernel names; then a 1 MB aiter markdown summary table after a check line at its end), then times,
interleaved and best of N:

- ``grep -c checkAllclose`` (one literal: the least work a reader of this output can do), and
  ``grep -c -i -E`` with the words the aiter parser looks for (the same search the parser makes);
- the Python floor: reading the file in 1 MB chunks and counting newlines, and LineReader alone;
- each parser (via dispatch), each in a fresh child process whose ru_maxrss growth during the parse
  is read, and once more under tracemalloc for the peak of Python allocations; and the aiter parser
  once more with the prefilter's ``re`` engine (``aiter-op-test/re``: where no Hyperscan wheel
  exists) and with its prefilter off (``aiter-op-test/every-line``: every line handed to it).

Targets: the aiter parser at >= 1/3 of grep's speed; peak memory < 64 MB whatever the size. The
ratio is given against both greps: the one searching for what the parser searches for (the same
work) and the one-literal grep (the least work any reader of the output can do).

    python bench/parse.py [--size-mb 200] [--repeats 3] [--save bench/results/parse.txt]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIB = 1 << 20
TARGET_RATIO = 1 / 3
TARGET_PEAK = 64 * MIB
KINDS = ("aiter-op-test", "bench", "flydsl-pytest", "triton-pytest", "aiter-op-test/re", "aiter-op-test/every-line")
EVERY_LINE = "/every-line"  # a kind with this suffix: parsed with the prefilter off
RE_ENGINE = "/re"  # ... with the prefilter's re engine
# What the aiter parser (and its metrics observer) looks for in a line, as one grep pattern.
TRIGGERS = r"checkAllclose|-->max|AssertionError|^\||summary|^calling |\[perf\]|avg:|cos|max|diff|snr|greatest"

NOISE = [
    "[aiter] WARNING: NUMA balancing is enabled, which may cause errors. It is recommended to disable NUMA balancing "
    "by running \"sudo sh -c 'echo 0 > /proc/sys/kernel/numa_balancing'\" for more details: "
    "https://rocm.docs.amd.com/en/latest/how-to/system-optimization/mi300x.html#disable-numa-auto-balancing",
    "[aiter] [pid={i} pname=MainProcess] start build [module_gemm_a8w8_{i}] under /opt/aiter/aiter/jit/build/module_x",
    "[aiter] [pid={i} pname=MainProcess] \x1b[32mfinish build [module_gemm_a8w8_{i}], cost 39.6s \x1b[0m",
    "Successfully preprocessed all matching files.",
    "[aiter] import [module_aiter_enum] under /opt/aiter/aiter/jit/module_aiter_enum.so",
    "[aiter] hipModuleLoad: /opt/aiter/hsa/gfx942/fmoe/fmoe_fp8_g1u1_subGU_128.co GetFunction: fmoe_fp8_g1u1 Success",
    "[W527 04:47:30.915885614 collection.cpp:1100] Warning: ROCTracer produced duplicate flow start: {i} "
    "(function operator())",
    "[aiter] shape is M:16, N:1536, K:7168, found padded_M: 16, N:1536, K:7168 is tuned on cu_num = 304 in CKGEMM , "
    "kernel name is a8w8_blockscale_1x128x128_256x16x64x256_16x16_16x16_16x16x1_16x16x1_1x16x1x16_4_1x1_intrawave_v1!",
    "[aiter] LoadKernel: _ZN5aiter27fmoe_fp8_g1u1_subGU_128E hsaco: /opt/aiter/hsa/gfx942/fmoe/fmoe_{i}.co",
    "[aiter] using soltype=0, solidx=0 for m=16 n=1536 k=7168",
    "  0%|          | 0/{i} [00:00<?, ?it/s]".replace("|", "/"),
]


def generate(path: Path, size: int) -> tuple[int, int]:
    """Noise up to ``size - 1 MB``, then a passing check and a 1 MB markdown summary table."""
    table = [
        "[aiter] ck: [checkAllclose atol=0.01 rtol=0.01 \x1b[32mpassed~\x1b[0m]",
        "[aiter] gemm_a8w8 summary (markdown):",
        "| dtype          |     m |    n |    k |   ck us |   ck TFLOPS |   ck err |   asm us |   asm err |",
        "|:---------------|------:|-----:|-----:|--------:|------------:|---------:|---------:|----------:|",
    ]
    rows = 0
    table_bytes = sum(len(t) + 1 for t in table)
    while table_bytes < MIB:
        m = 16 * (rows + 1)
        us = 12.3457 + rows % 97 / 10
        line = f"| torch.bfloat16 | {m:5d} | 1536 | 7168 | {us:7.4f} |     28.5301 |        0 |  9.87654 |         0 |"
        table.append(line)
        table_bytes += len(line) + 1
        rows += 1
    tail = ("\n".join(table) + "\n").encode()
    block = "\n".join(NOISE[j % len(NOISE)].format(i=j) for j in range(4096)).encode() + b"\n"
    with open(path, "wb") as fh:
        written = 0
        while written + len(block) < size - len(tail):
            fh.write(block)
            written += len(block)
        fh.write(block[: max(0, size - len(tail) - written)].rsplit(b"\n", 1)[0] + b"\n")
        fh.write(tail)
    return path.stat().st_size, rows


CHILD = r"""
import json, resource, sys, time, tracemalloc
sys.path.insert(0, sys.argv[1])
from pytest_gpuverify.parsers.reading import prefilter
from pytest_gpuverify.parsers.reader import parse_output
from pytest_gpuverify.parsers.reading.lines import LineReader
kind, path, mode = sys.argv[2], sys.argv[3], sys.argv[4]
if kind.endswith("/every-line"):
    kind, prefilter.ENABLED = kind[: -len("/every-line")], False
if kind.endswith("/re"):
    kind, prefilter.ENGINE = kind[: -len("/re")], "re"
out_engine = prefilter.ENGINE
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if mode == "tracemalloc":
    tracemalloc.start()
t = time.perf_counter()
if kind == "read":
    n = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            n += chunk.count(b"\n")
    out = {"lines": n, "perf": 0, "passed": None}
elif kind == "linereader":
    reader = LineReader(path)
    for _ in reader:
        pass
    out = {"lines": reader.lines_read, "perf": 0, "passed": None}
else:
    result = parse_output(kind, path)
    out = {"lines": result.lines_read, "perf": len(result.perf), "passed": result.correctness.passed}
out["engine"] = out_engine
out["seconds"] = time.perf_counter() - t
if mode == "tracemalloc":
    out["peak"] = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
out["rss_growth"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
print(json.dumps(out))
"""


def child(kind: str, path: Path, mode: str = "time") -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), kind, str(path), mode], capture_output=True, text=True, check=True
    )
    return json.loads(proc.stdout)


def grep(args: list[str], path: Path) -> tuple[float, int]:
    env = dict(os.environ, LC_ALL="C")
    t = time.perf_counter()
    proc = subprocess.run(["grep", "-c", *args, str(path)], capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t
    if proc.returncode not in (0, 1):
        raise SystemExit(f"grep failed: {proc.stderr}")
    return elapsed, int(proc.stdout.strip() or 0)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--save", type=Path, help="also write the report to this file")
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    report = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="gv-parse-") as tmp:
        path = Path(tmp) / "huge_output.txt"
        t = time.perf_counter()
        size, table_rows = generate(path, args.size_mb * MIB)
        gen_s = time.perf_counter() - t
        mb = size / MIB
        greps = {"grep -c checkAllclose": ["checkAllclose"], "grep -c -i -E <parser words>": ["-i", "-E", TRIGGERS]}
        best: dict[str, float] = {}
        runs: dict[str, dict] = {}
        for _ in range(args.repeats):  # interleaved, so a busy moment hurts every row alike
            for name, gargs in greps.items():
                seconds, count = grep(gargs, path)
                best[name] = min(best.get(name, 1e9), seconds)
                runs[name] = {"count": count}
            for kind in ("read", "linereader", *kinds):
                out = child(kind, path)
                if out["seconds"] < best.get(kind, 1e9):
                    best[kind], runs[kind] = out["seconds"], out
        peaks = {kind: child(kind, path, "tracemalloc")["peak"] for kind in kinds}
        grep_s = best["grep -c checkAllclose"]
        same_s = best["grep -c -i -E <parser words>"]
        with redirect_stdout(report):
            print(
                f"parse throughput: {mb:.1f} MB output ({table_rows} markdown table rows at its end), "
                f"best of {args.repeats}, generated in {gen_s:.1f} s; python {sys.version.split()[0]}, "
                f"{os.cpu_count()} CPUs"
            )
            print()
            print(
                f"| {'what':40} | {'seconds':>8} | {'MB/s':>7} | {'vs grep -c lit':>14} | {'vs grep -i -E':>13} "
                f"| {'RSS growth':>10} | {'tracemalloc':>11} | result |"
            )
            print(f"|{'-' * 42}|{'-' * 10}|{'-' * 9}|{'-' * 16}|{'-' * 15}|{'-' * 12}|{'-' * 13}|--------|")
            for name in [*greps, "read", "linereader", *kinds]:
                seconds = best[name]
                run = runs[name]
                label = {"read": "python: read 1 MB chunks + count \\n", "linereader": "python: LineReader alone"}.get(
                    name, name if name in greps else f"parse_output({name})"
                )
                rss = f"{run['rss_growth'] / MIB:8.1f} MB" if "rss_growth" in run else f"{'-':>10}"
                peak = f"{peaks[name] / MIB:7.1f} MB" if name in peaks else f"{'-':>11}"
                if name in kinds:
                    result = f"{run['perf']} perf rows, passed={run['passed']}, engine {run['engine']}"
                else:
                    result = f"{run['count'] if name in greps else run['lines']} lines"
                print(
                    f"| {label:40} | {seconds:8.3f} | {mb / seconds:7.0f} | {grep_s / seconds:13.3f}x "
                    f"| {same_s / seconds:12.3f}x | {rss} | {peak} | {result} |"
                )
            print()
            aiter = best.get("aiter-op-test")
            if aiter is not None:
                ratio, same = grep_s / aiter, same_s / aiter
                peak = max(peaks.get("aiter-op-test", 0), runs["aiter-op-test"]["rss_growth"])
                print(
                    f"aiter parser: {mb / aiter:.0f} MB/s = {same:.3f} of a grep for the same words "
                    f"(target {TARGET_RATIO:.3f}: {'met' if same >= TARGET_RATIO else 'NOT met'}), "
                    f"{ratio:.3f} of `grep -c checkAllclose` "
                    f"({'met' if ratio >= TARGET_RATIO else 'NOT met'} against that one)"
                )
                print(
                    f"aiter parser memory: tracemalloc peak {peaks.get('aiter-op-test', 0) / MIB:.1f} MB, "
                    f"RSS growth {runs['aiter-op-test']['rss_growth'] / MIB:.1f} MB "
                    f"(target < {TARGET_PEAK // MIB} MB: {'met' if peak < TARGET_PEAK else 'NOT met'})"
                )
                slow = best.get("aiter-op-test" + RE_ENGINE)
                if slow is not None:
                    print(
                        f"aiter parser with the re engine (no Hyperscan wheel): {slow:.3f} s, {mb / slow:.0f} MB/s, "
                        f"{same_s / slow:.3f} of the same-words grep; Hyperscan makes it {slow / aiter:.1f}x faster"
                    )
                every = best.get("aiter-op-test" + EVERY_LINE)
                if every is not None:
                    print(
                        f"aiter parser with its prefilter off (every line handed over): {every:.3f} s, "
                        f"{mb / every:.0f} MB/s; the prefilter makes it {every / aiter:.1f}x faster"
                    )
                floor = best["read"]
                print(f"python floor (read + count newlines, no parsing): {floor:.3f} s = {grep_s / floor:.2f} of grep")
    show_and_save(report, args.save)
    return 0


def show_and_save(report: io.StringIO, save: Path | None) -> None:
    """Print a bench's report, and write it to ``save`` where given (``bench/results/...``)."""
    text = report.getvalue()
    print(text, end="")
    if save:
        save.parent.mkdir(parents=True, exist_ok=True)
        save.write_text(text)


if __name__ == "__main__":
    raise SystemExit(main())
