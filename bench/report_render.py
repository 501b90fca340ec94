"""How long headless Chromium takes to render ``gpuverify report`` pages: the A/B of 120 shapes (2,400 perf
rows), one target and a 10,000-run history, against an empty report (no target) rendered in the same
run. The time is the page's own, from navigation to its layout done (``performance.now()`` after a
forced layout, read by tests/support/chromium.py's probe), so Chromium's start is not in it. Each page
is opened ``--rounds`` times, interleaved; prints each page's median and best in ms and its ratio to
the empty page's median. The goal: the A/B page under 1,000 ms.

    python bench/report_render.py [--rounds 5] [--out bench/results/report_render.txt]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from pytest_gpuverify.reporting.html_report import render  # noqa: E402
from tests.support.chromium import probe  # noqa: E402
from tests.support.report_cases import ab_page, history_page, one_target_page  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    pages = {"empty": lambda: render([], []), "one target": one_target_page, "A/B 120 shapes": ab_page}
    pages["10,000-run history"] = history_page
    times: dict[str, list[float]] = {name: [] for name in pages}
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for k, (name, make) in enumerate(pages.items()):
            files[name] = Path(tmp) / f"page{k}.html"
            files[name].write_text(make(), encoding="utf-8")
        for _ in range(args.rounds):
            for name, path in files.items():
                times[name].append(probe(path)["rendered_ms"])
    empty = statistics.median(times["empty"])
    lines = [f"{'page':<20} {'median ms':>10} {'best ms':>9} {'x empty':>8}"]
    for name, found in times.items():
        med = statistics.median(found)
        lines.append(f"{name:<20} {med:>10.0f} {min(found):>9.0f} {med / empty:>8.2f}")
    load = os.getloadavg()[0]
    lines.append(
        f"load average at the end: {load:.1f} on {os.cpu_count()} cores (a busy machine: read the best column)"
    )
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
