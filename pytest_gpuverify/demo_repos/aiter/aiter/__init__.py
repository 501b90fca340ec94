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
