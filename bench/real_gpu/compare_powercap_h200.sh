#!/usr/bin/env bash
# A GEMM at the power cap on the lent NVIDIA machine (no Docker there: --gpu-container none), compared with
# itself, one call:
#  1. A/A, two sessions of one commit, 5 runs each: a torch bf16 GEMM of 8192^3 held for seconds per run
#     (do_bench with a long warm-up), which keeps an H200 at its power cap (sw_power_cap, ~700 W);
#  2. A/A, --gpu-ab HEAD with 5 rounds, the same GEMM interleaved.
# Expected: every run's watch lists sw_power_cap among its normal events and no unlike event (thermal,
# hardware slowdown, power brake, sync boost); compare calls the rows SAME, none vetoed ("was throttled"),
# and its notes say the power cap was reached (not a veto); gpuverify check passes every artifact.
# Logs, compare outputs (table and --json) and the artifacts go to $OUT.
#   OUT=/tmp/out bash bench/real_gpu/compare_powercap_h200.sh      (wheels from $WHEELS, default <checkout>/.whl)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd); top=$(cd "$here/../.." && pwd)
WHEELS=${WHEELS:-$top/.whl}; . "$here/sandbox.sh"
PT="python3 -m pytest -p pytest_gpuverify.plugin -p no:cacheprovider --gpu-verify --gpu-container none --gpu-env $W/env.md -q"
GV="python3 -m pytest_gpuverify.cli.main"
T=gemm-powercap
REPEATS=${REPEATS:-5}  # runs per session (a short device budget: 3)
R=$W/repos/aiter
cat > $R/op_tests/op_benchmarks/triton/bench_gemm_powercap.py <<'PY'
"""A large bf16 GEMM (torch's own), checked against an fp32 product, then timed with perf_report for seconds
per size: long enough that the GPU runs at its power cap for most of the run."""
import torch
import triton

torch.manual_seed(0)
a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
b = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
got, ref = torch.matmul(a, b).float(), torch.matmul(a.float(), b.float())
err = (got - ref).abs().max().item()
cos = torch.nn.functional.cosine_similarity(got.flatten(), ref.flatten(), dim=0).item()
print(f"gemm bf16: max_abs_error={err:.3e} cosine_sim={cos:.6f}")
status = "passed~" if torch.allclose(got, ref, atol=1.0, rtol=0.05) else "failed!"
print(f"[checkAllclose atol=1.0 rtol=0.05 {status}]")


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["N"], x_vals=[8192], line_arg="provider", line_vals=["torch"], line_names=["Torch"],
        ylabel="TFLOPS", plot_name="gemm-powercap", args={},
    )
)
def benchmark(N, provider):
    x = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    ms = triton.testing.do_bench(lambda: torch.matmul(x, y), warmup=1500, rep=3000)
    return 2 * N ** 3 * 1e-12 / (ms * 1e-3)


benchmark.run(print_data=True)
PY
cat >> $R/gpuverify.toml <<'TOML'

[[targets]]
name = "gemm-powercap"
kind = "bench"
command = "python3 op_tests/op_benchmarks/triton/bench_gemm_powercap.py"
regime = "warm"

[targets.thresholds]
cosine_sim_min = 0.999
TOML
git -C $R add -A && git -C $R -c user.name=b -c user.email=b@b commit -qm "a GEMM at the power cap"
compare() {  # name, then compare's arguments: the table and the JSON kept, the calls and vetoes counted
  local name=$1; shift
  (cd $top && $GV compare "$@") > "$OUT/compare_$name.txt" 2>&1; echo "compare $name exit $?"
  (cd $top && $GV compare --json "$@") > "$OUT/compare_$name.json" 2>/dev/null
  cat "$OUT/compare_$name.txt"
  python3 - "$OUT/compare_$name.json" <<'PY'
import collections, json, sys
try:
    doc = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit(print("no JSON (refused)"))
pairs = doc["pairs"]
vetoed = [p for p in pairs if "was throttled" in (p.get("why") or "")]
capped = [n for n in doc["notes"] if "reached its power cap" in n]
print("calls:", dict(collections.Counter(p["call"] for p in pairs)), "| vetoed by a clock event:", len(vetoed),
      "| power-cap notes:", len(capped))
print("EXPECTED" if pairs and not vetoed and capped and all(p["call"] == "SAME" for p in pairs) else "NOT AS EXPECTED")
PY
}
clocks() {  # each run's clock events and extremes, as the artifact records them
  python3 - "$@" <<'PY'
import json, sys
for path in sys.argv[1:]:
    art = json.load(open(path))
    print(path.split("/")[-2], art["verdict"], art["reasons"][:1])
    for w in art["watch"]:
        for g in w["clocks"]:
            print(f"  run {w['side'] or ''}{w['run']} gpu {g['index']}: normal {g['normal_events']} unlike "
                  f"{g['unlike_events']} SM {g['sm_mhz_min']}..{g['sm_mhz_max']} MHz (rated {g['sm_mhz_rated']}), "
                  f"power max {g['power_w_max']} W, temp max {g['temp_c_max']} C, throttled {g['throttled']}")
PY
}
{
echo "== versions"; nvidia-smi -L; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
nvidia-smi --query-gpu=index,power.limit,power.default_limit,clocks.max.sm --format=csv
cd $R
echo "== 0. warm-up (compile caches), and the power the GEMM draws"
( sleep 4; nvidia-smi --query-gpu=index,power.draw,clocks.sm,clocks_event_reasons.active --format=csv \
  || nvidia-smi --query-gpu=index,power.draw,clocks.sm,clocks_throttle_reasons.active --format=csv ) &
python3 op_tests/op_benchmarks/triton/bench_gemm_powercap.py | tail -3; wait
echo "== 1. A/A, two sessions of $(git rev-parse --short HEAD), $REPEATS runs each"
for t in PC-1 PC-2; do $PT --ticket $t --gpu-target $T --gpu-repeats $REPEATS; echo "pytest $t exit $?"; done
clocks $W/tickets/PC-1/bench_$T.json $W/tickets/PC-2/bench_$T.json
compare aa_powercap $W/tickets/PC-1/bench_$T.json $W/tickets/PC-2/bench_$T.json
echo "== 2. A/A, --gpu-ab HEAD, $REPEATS rounds"
$PT --ticket PC-AB --gpu-target $T --gpu-ab HEAD --gpu-repeats $REPEATS; echo "pytest exit $?"
clocks $W/tickets/PC-AB/bench_$T.json
compare ab_powercap $W/tickets/PC-AB/bench_$T.json
echo "== 3. gpuverify check over the artifacts (the watch sealed in each raw log)"
(cd $top && $GV check $W/tickets/PC-1 $W/tickets/PC-2 $W/tickets/PC-AB | tail -4)
} 2>&1 | tee "$OUT/compare_powercap_h200_run.log"
tar czf "$OUT/tickets.tar.gz" -C $W/tickets .
