"""The torch-profiler wrapper as the engine runs it (``python -c <source> OUT -- argv``), in a real
subprocess. torch is not installed here, so a minimal stand-in package of the profiler's interface (its
context manager and ``export_chrome_trace``) takes its place; what is tested is the wrapper's own work:
the command run in-process as a script or a module, with its argv and its exit code, and the trace written."""

from __future__ import annotations

import json
import subprocess
import sys

from pytest_gpuverify.trace.readers import read_trace
from pytest_gpuverify.trace.tracers import TORCH_PROFILER, trace_run

TORCH_STANDIN = """
class ProfilerActivity:
    CUDA = "cuda"

class profile:
    def __init__(self, activities):
        self.activities = activities
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False
    def export_chrome_trace(self, path):
        import json
        events = [{"ph": "X", "cat": "kernel", "name": "add_kernel", "ts": 5.0 + i, "dur": 0.5,
                   "args": {"grid": [8, 1, 1]}} for i in range(4)]
        with open(path, "w") as fh:
            json.dump({"traceEvents": events}, fh)
"""


def standin(tmp_path):
    pkg = tmp_path / "site" / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("class cuda:\n    is_available = staticmethod(lambda: False)\n")
    (pkg / "profiler.py").write_text(TORCH_STANDIN)
    return tmp_path / "site"


def run_traced(tmp_path, argv):
    planned = trace_run("nvidia", lambda tool: False, argv, str(tmp_path), "trace")
    assert not isinstance(planned, str) and planned.tool == TORCH_PROFILER and planned.format == "kineto-json"
    env = {"PYTHONPATH": f"{standin(tmp_path)}:{tmp_path}", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(planned.argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    return proc, planned


def test_a_script_runs_in_process_with_its_argv_and_exit_code(tmp_path):
    (tmp_path / "bench.py").write_text("import sys\nprint('argv', sys.argv)\nprint('main', __name__)\nsys.exit(3)\n")
    proc, planned = run_traced(tmp_path, [sys.executable, "bench.py", "--size", "4"])
    assert proc.returncode == 3, proc.stderr
    assert "argv ['bench.py', '--size', '4']" in proc.stdout and "main __main__" in proc.stdout
    launches = read_trace(tmp_path / "trace.kineto.json.gz", "kineto-json")
    assert planned.output == f"{tmp_path}/trace.kineto.json.gz" and len(launches) == 4


def test_a_module_runs_as_python_m_would(tmp_path):
    (tmp_path / "innerbench.py").write_text("import sys\nprint('module argv', sys.argv[1:])\n")
    proc, _ = run_traced(tmp_path, [sys.executable, "-m", "innerbench", "-q"])
    assert proc.returncode == 0 and "module argv ['-q']" in proc.stdout, proc.stderr


def test_no_nsys_and_no_python_command_is_a_reason_not_a_crash(tmp_path):
    said = trace_run("nvidia", lambda tool: False, ["./bench_binary", "--n", "4"], str(tmp_path), "trace")
    assert said == (
        "nsys is not installed and ./bench_binary is not a Python command for torch's profiler. "
        "Fix: install Nsight Systems, or drop --gpu-trace"
    )
    planned = trace_run("nvidia", lambda tool: tool == "nsys", ["./bench_binary"], "/tmp/x", "trace")
    assert not isinstance(planned, str) and planned.argv[:3] == ["nsys", "profile", "--trace=cuda"]
    assert json.dumps(planned.output) == '"/tmp/x/trace.sqlite"'
