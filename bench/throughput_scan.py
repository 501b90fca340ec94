"""The cost the throughput-line scan (parsers/throughput.py) adds to every parse.

Writes an output of N MiB of aiter-like noise with a vLLM throughput line at each end, and times
``throughput_rows`` on it (best of 3). Only lines holding ``/s`` are decoded, found with mmap.find.

    python bench/throughput_scan.py [--mib 256]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from pytest_gpuverify.parsers.throughput import throughput_rows

LINE = b"[aiter] module_gemm_a8w8 m=128 n=1280 k=8192 ck 9.29 us err 0.0 passed~\n"
VLLM = b"Throughput: 12.34 requests/s, 4567.89 total tokens/s, 2345.67 output tokens/s\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=256)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.log"
        block = LINE * ((1 << 20) // len(LINE) + 1)
        with open(path, "wb") as fh:
            fh.write(VLLM)
            for _ in range(args.mib):
                fh.write(block)
            fh.write(VLLM)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            rows = throughput_rows(path)
            times.append(time.perf_counter() - start)
        assert len(rows) == 2
        size = path.stat().st_size / (1 << 20)
        print(f"{size:.0f} MiB, 2 throughput rows: best {min(times):.3f} s ({min(times) / size * 1000:.2f} ms/MiB)")


if __name__ == "__main__":
    main()
