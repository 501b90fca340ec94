# FlyDSL kernel tests print perf one-liners per case (visible with -rA).
import pytest


@pytest.mark.parametrize("m,n", [(32, 1024), (64, 8192)])
def test_rmsnorm(m, n):
    print(f"Testing RMSNorm (M={m}, N={n}, dtype=bf16, weight_dtype=bf16)")
    print(f"Kernel avg time: {0.0123 * m / 32:.4f} ms via run_perftest (warmup=3, iters=20)")
    print(f"Bandwidth: {1234.56 * m / 32:.2f} GB/s")
    print("Bandwidth: 99.00 GB/s")
    print(f"Max absolute error: {1e-3 * m / 32:.2e} (atol=0.01)")
    print("PASSED")


def test_gemm_flyc():
    print("[flyc] Throughput: 12.3 us, 456.78 TFLOPS, BW: 1.234 TB/s")
