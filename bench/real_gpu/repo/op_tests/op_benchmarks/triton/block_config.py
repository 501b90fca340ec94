BLOCK = 128  # BLOCK_M = BLOCK_N of bench_matmul_block.py; bench/real_gpu/compare_h200.sh commits another
