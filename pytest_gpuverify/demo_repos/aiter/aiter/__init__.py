"""A stand-in for ROCm/aiter used by the gpuverify demo and tests: its op_tests print what the real ones print."""

import logging
import os
import sys

logger = logging.getLogger("aiter")
_handler = logging.StreamHandler()  # stderr, like aiter's own logger
_handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
logger.addHandler(_handler)
logger.setLevel(logging.INFO)
logger.propagate = False

GREEN, YELLOW, RED, RESET = "\033[32m", "\033[33m", "\033[31m", "\033[0m"


def check_line(msg, status, atol=0.01, rtol=0.01):
    colour = {"passed~": GREEN, "warning!": YELLOW}.get(status, RED)
    logger.info(f"{msg}[checkAllclose atol={atol} rtol={rtol} {colour}{status}{RESET}]")


def report_environment():
    """What the command saw: lets the tests prove the plugin set the environment it promises."""
    keys = ("HIP_VISIBLE_DEVICES", "PYTHONPATH", "AITER_JIT_DIR", "PYTHONUNBUFFERED", "COLUMNS", "GPU_ARCHS")
    print("[gv-env] " + " ".join(f"{k}={os.environ.get(k, '')}" for k in keys) + f" cwd={os.getcwd()}")
    sys.stdout.flush()


def jit_build(module):
    """What aiter's JIT leaves behind: a built module under $AITER_JIT_DIR (a cache hit skips the build)."""
    root = os.environ.get("AITER_JIT_DIR") or os.path.join(os.path.dirname(__file__), "jit")
    target = os.path.join(root, "build", module, f"{module}.so")
    if os.path.exists(target):
        logger.info(f"import [{module}] under {target}")
        return
    logger.info(f"start build [{module}] under {os.path.dirname(target)}")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w") as fh:
        fh.write("built\n")
    logger.info(f"\033[32mfinish build [{module}], cost 12.3s \033[0m")


_GPU_CLOCK = [0]  # the simulated GPU's clock (ns): each launch starts after the last one ended


def sim_launch(name, grid, us, workgroup=(256, 1, 1), code_object=None, gap_us=2.0):
    """A simulated kernel launch that took ``us`` microseconds: told to the simulated tracer, which names
    the file to append it to in $GPUVERIFY_SIM_KERNEL_LOG (set only under the tracer: a timed run pays nothing)."""
    import json
    import time

    path = os.environ.get("GPUVERIFY_SIM_KERNEL_LOG")
    if not path:
        return
    start = max(_GPU_CLOCK[0], time.time_ns())
    end = start + round(us * 1000)
    _GPU_CLOCK[0] = end + round(gap_us * 1000)
    launch = {"name": name, "grid": list(grid), "workgroup": list(workgroup), "start_ns": start, "end_ns": end}
    if code_object:
        launch["code_object"] = code_object
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(launch) + "\n")


def triton_cache_entry(name, variant):
    """What Triton's JIT leaves in $TRITON_CACHE_DIR for a compiled kernel: ``<name>.json`` metadata
    beside the ``<name>.hsaco`` code object, whose bytes follow the kernel's source (``variant``)."""
    import hashlib
    import json

    root = os.environ.get("TRITON_CACHE_DIR")
    if not root:
        return
    key = hashlib.sha256(f"{name}:{variant}".encode()).hexdigest()[:32]
    folder = os.path.join(root, key)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{name}.hsaco"), "wb") as fh:
        fh.write(b"\x7fELF simulated hsaco " + variant.encode() * 16)
    with open(os.path.join(folder, f"{name}.json"), "w", encoding="utf-8") as fh:
        json.dump({"name": name, "hash": key, "target": {"backend": "hip", "arch": "gfx942"}}, fh)
