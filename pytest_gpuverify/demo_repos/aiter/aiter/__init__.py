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
