# 100 MB of JIT-like noise, then one passing check and a summary: the raw output must stream to disk.
import os
import sys

import aiter

aiter.report_environment()
size = int(os.environ.get("GV_HUGE_MB", "100")) << 20
line = b"[aiter] [pid=1 pname=MainProcess] start build [module_x] under /tmp/jit/build/module_x " + b"x" * 900 + b"\n"
out = sys.stdout.buffer
written = 0
while written < size:
    out.write(line * 64)
    written += len(line) * 64
out.flush()
aiter.check_line("ck: ", "passed~")
print("| m | ck us | ck err |\n|---:|---:|---:|\n| 16 | 5.5 | 0 |", flush=True)
