"""The tracers' and profilers' command lines: the target's own command, unchanged, run under the tool.

ROCm traces with ``rocprofv3 --kernel-trace`` into a rocpd SQLite database; NVIDIA with ``nsys profile
--trace=cuda`` (exported to SQLite) where nsys is installed, else the command runs in-process under
torch's profiler (CUPTI through Kineto: ``torch_profile.py``), which needs a Python command. Profiles
(``--gpu-profiler``) run ncu, nsys, rocprofv3 (counters) or rocprof-compute the same way."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TORCH_PROFILER = "torch-profiler"


@dataclass
class ToolRun:
    tool: str
    format: str
    argv: list[str]  # the command under the tool
    output: str  # the file it writes, as the command's place sees it
    version_argv: list[str]  # prints the tool's version
    purpose: str = "trace"


def trace_run(vendor: str, have: Callable[[str], bool], argv: list[str], out_dir: str, name: str) -> ToolRun | str:
    """How to trace ``argv`` (``have``: is a tool on the place's PATH); a string says why it cannot."""
    if vendor == "rocm":
        if not have("rocprofv3"):
            return (
                "rocprofv3 is not installed where the command runs. Fix: install rocprofiler-sdk, or drop --gpu-trace"
            )
        return ToolRun(
            "rocprofv3",
            "rocpd",
            ["rocprofv3", "--kernel-trace", "--output-format", "rocpd", "-d", out_dir, "-o", name, "--", *argv],
            f"{out_dir}/{name}_results.db",
            ["rocprofv3", "--version"],
        )
    if have("nsys"):
        out = f"{out_dir}/{name}"
        return ToolRun(
            "nsys",
            "nsys-sqlite",
            ["nsys", "profile", "--trace=cuda", "--export=sqlite", "--force-overwrite=true", "-o", out, *argv],
            f"{out}.sqlite",
            ["nsys", "--version"],
        )
    python = python_of(argv)
    if python is None:
        return (
            f"nsys is not installed and {argv[0] if argv else 'the command'} is not a Python command for "
            "torch's profiler. Fix: install Nsight Systems, or drop --gpu-trace"
        )
    out = f"{out_dir}/{name}.kineto.json.gz"
    return ToolRun(
        TORCH_PROFILER,
        "kineto-json",
        [python, "-c", torch_profile_source(), out, "--", *argv[1:]],
        out,
        [python, "-c", "import torch; print('torch', torch.__version__)"],
    )


NCU_LAUNCHES = 10  # ncu profiles the first launches that match the filter, this many


def profile_run(
    tool: str, have: Callable[[str], bool], argv: list[str], out_dir: str, name: str, kernel_filter: str | None
) -> ToolRun | str:
    """How to profile ``argv`` under ``tool`` (--gpu-profiler), or why it cannot."""
    exe = "rocprof-compute" if tool == "rocprof-compute" else tool
    if not have(exe):
        return f"{exe} is not installed where the command runs. Fix: install it, or drop --gpu-profiler"
    out = f"{out_dir}/{name}"
    if tool == "ncu":
        # the full set replays each profiled launch some 40 times: a benchmark's hundreds of timed launches
        # would take many minutes, and a few launches of each kernel are what a developer reads
        narrow = ["--kernel-name", f"regex:{kernel_filter}"] if kernel_filter else []
        narrow += ["--launch-count", str(NCU_LAUNCHES)]
        return ToolRun(
            "ncu",
            "ncu-rep",
            ["ncu", "--set", "full", *narrow, "-f", "-o", out, *argv],
            f"{out}.ncu-rep",
            ["ncu", "--version"],
            "profile",
        )
    if tool == "nsys":
        return ToolRun(
            "nsys",
            "nsys-rep",
            ["nsys", "profile", "--force-overwrite=true", "-o", out, *argv],
            f"{out}.nsys-rep",
            ["nsys", "--version"],
            "profile",
        )
    if tool == "rocprofv3":
        narrow = ["--kernel-include-regex", kernel_filter] if kernel_filter else []
        return ToolRun(
            "rocprofv3",
            "rocpd",
            [
                "rocprofv3",
                "--kernel-trace",
                "--stats",
                *narrow,
                "--output-format",
                "rocpd",
                "-d",
                out_dir,
                "-o",
                name,
                "--",
                *argv,
            ],
            f"{out_dir}/{name}_results.db",
            ["rocprofv3", "--version"],
            "profile",
        )
    narrow = ["-k", kernel_filter] if kernel_filter else []
    # rocprof-compute writes a workload folder: packed into one file to be stored and hashed like the others
    return ToolRun(
        "rocprof-compute",
        "rocprof-compute-tar",
        [
            "sh",
            "-c",
            'rocprof-compute profile -n "$0" -p "$1" "$@" && tar -C "$1" -czf "$1.tar.gz" .',
            name,
            out,
            *narrow,
            "--",
            *argv,
        ],
        f"{out}.tar.gz",
        ["rocprof-compute", "--version"],
        "profile",
    )


def python_of(argv: list[str]) -> str | None:
    """The interpreter of a Python command (``python3 x.py``, ``python -m pytest``), else None."""
    if argv and os.path.basename(argv[0]).startswith("python") and len(argv) > 1:
        return argv[0]
    return None


def torch_profile_source() -> str:
    return (Path(__file__).parent / "torch_profile.py").read_text(encoding="utf-8")
