#!/usr/bin/env bash
# The printout reader on the lent H200: a real Triton kernel's verdict printed in harness spellings
# (a mismatch under exit_status_is_check, a bare False, a status value, a bracketed FAIL, a table's
# Correctness column), its right twin, and a FlagGems-style benchmark table timed with do_bench; each
# target's verdict, reasons and perf rows from its artifact, then `gpuverify check` on every artifact.
#   WHEELS=/path/wheels bash bench/real_gpu/printout_h200.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/../.." && pwd)
WHEELS=${WHEELS:-$top/.whl}; . "$here/sandbox.sh"
python3 -m compileall -q /tmp/site $top/pytest_gpuverify >/dev/null 2>&1
PT="python3 -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md"
cd $W/repos/aiter
{
echo "== versions"; nvidia-smi -L; python3 -c "import torch, triton, pynvml; print('torch', torch.__version__, 'triton', triton.__version__)"
echo "== the targets"
$PT -q --ticket PRINT-1 --gpu-target printout-mismatch-exitcheck --gpu-target printout-right-exitcheck \
  --gpu-target printout-bool --gpu-target printout-status --gpu-target printout-bracket \
  --gpu-target printout-table-right --gpu-target printout-table-wrong --gpu-target flaggems-style-bench
echo "pytest exit $?"
echo "== each artifact"
python3 - $W/tickets/PRINT-1 <<'PY'
import json, pathlib, sys
for p in sorted(pathlib.Path(sys.argv[1]).glob("bench_*.json")):
    a = json.loads(p.read_text())
    c = a["correctness"]
    print(f"{a['topic']}: {a['verdict']} exit {a['exit_code']} checks passed {c['checks_passed']} failed {c['checks_failed']} "
          f"shapes {c['shapes_checked']} max_abs_error {c['max_abs_error']}; perf rows {len(a['perf'])}")
    for r in a["reasons"][:3]:
        print(f"    reason: {r}")
    for n in a["notes"][:2]:
        print(f"    note: {n}")
    for r in a["perf"][:4]:
        print(f"    perf: table={r.get('table')!r} shape={r['shape']!r} name={r['name']!r} us_median={r['us_median']} metrics={r['metrics']}")
PY
echo "== raw outputs"
for f in $W/tickets/PRINT-1/*.log; do echo "--- $f"; head -40 "$f"; done
echo "== gpuverify check"
for a in $W/tickets/PRINT-1/bench_*.json; do python3 -m pytest_gpuverify.cli.main check "$a" | tail -1; done
} 2>&1 | tee "$OUT/printout_h200.log"
tar czf "$OUT/tickets.tar.gz" -C $W/tickets .
