# Sourced by the many-GPU scripts on the lent NVIDIA machine: the carried wheels (from $WHEELS, default
# <checkout>/.whl; none needed for a --dry-run-sim run here), NVLink multicast off, $OUT, and the GPU count.
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
top=$(cd "$here/../../.." && pwd); WHEELS=${WHEELS:-$top/.whl}
if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$top
else
  export PYTHONPATH=$top
fi
export PYTHONUNBUFFERED=1
# NVLink multicast off (a program that uses it can put the host's shared GPUs out of service)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
versions() {
  echo "== $(date -u +%FT%TZ) $(hostname): $N GPU(s)"; nvidia-smi -L 2>/dev/null
  nvidia-smi topo -m 2>/dev/null; nvidia-smi --query-gpu=index,mig.mode.current,power.limit,clocks.max.sm --format=csv 2>/dev/null
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" 2>/dev/null
  env | grep -E '^(NCCL_NVLS_ENABLE|TORCH_SYMM_MEM_DISABLE_MULTICAST|NVSHMEM_DISABLE_NVLS)='
}
