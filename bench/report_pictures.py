"""The report page's pictures (docs/report.md): the three reports the layout tests check (one target,
an A/B of 120 shapes over three decades, a 10,000-run history) rendered and screenshot in headless
Chromium (Debian's ``chromium``).

    python bench/report_pictures.py [--out docs/img]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from tests.support.chromium import screenshot  # noqa: E402
from tests.support.report_cases import ab_page, history_page, one_target_page  # noqa: E402

PICTURES = {"report-one-target": (one_target_page, 1300), "report-ab": (ab_page, 2000)}
PICTURES["report-history"] = (history_page, 1150)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "docs" / "img")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, (make, height) in PICTURES.items():
            page = Path(tmp) / f"{name}.html"
            page.write_text(make(), encoding="utf-8")
            print(screenshot(page, args.out / f"{name}.png", width=1100, height=height))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
