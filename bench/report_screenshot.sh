#!/usr/bin/env bash
# `gpuverify report` on the demo's ticket folder, opened in headless Chromium and screenshot.
# Needs Debian's chromium (apt-get install -y chromium). Run `bash scripts/demo.sh` first (or pass a folder).
# With GPUVERIFY_HISTORY=STORE set, the report gets its history section (below the verdict table).
# Usage: bash bench/report_screenshot.sh [TICKET_DIR...]
set -euo pipefail
cd "$(dirname "$0")/.."
dirs=("$@"); [ ${#dirs[@]} -gt 0 ] || dirs=(.demo/tickets/DEMO-1)
out=bench/results
mkdir -p "$out"
history=()
if [ -n "${GPUVERIFY_HISTORY:-}" ]; then history=(--history); fi
python3 -m pytest_gpuverify.cli.main report "${dirs[@]}" ${history[@]+"${history[@]}"} -o "$out/report.html"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --screenshot="$PWD/$out/report.png" \
  --window-size=1400,2000 "file://$PWD/$out/report.html" 2>/dev/null
echo "wrote $out/report.html and $out/report.png"
