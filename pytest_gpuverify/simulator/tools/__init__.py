"""The simulated tools: stdlib-only modules that ``install()`` copies flat into the bin dir.

There they sit beside the stubs and import one another by their flat names (``from
gpuverify_sim_common import ...``). Importing this package registers each under that name too (the
same module object under both names), so the modules import here exactly as they do there: the code
tested in this process is the code the stubs run. The prefix keeps the flat names clear of anything
else on a user's path.
"""

import importlib
import sys

USE_TOOL = "gpuverify-sim-use"  # the stub that runs a command as a process on the simulated GPUs
COMMON = "gpuverify_sim_common"  # STATE_PATH, main() and what the tools share
MODULES = (
    COMMON,
    "gpuverify_sim_rocm_smi",
    "gpuverify_sim_amd_smi",
    "gpuverify_sim_rocminfo",
    "gpuverify_sim_rocprofv3",
)

for _name in MODULES:  # common first: the others import it
    sys.modules[_name] = importlib.import_module(f"{__name__}.{_name}")
