"""--gpu-trace and --gpu-profiler: one extra run of the target's command under a tracer or a profiler,
after its timed runs and under the same lock, never one of them (its output is not parsed into the
result). The file it writes is moved out beside the raw log, named like it, hashed into the artifact's
``profiles[]``. A tool that is missing, a run that fails or a file that is not there is the record's
``problem``: one line, never a crash; the trace's rule then says it (trace/corroborate.py)."""

from __future__ import annotations

import shlex
from pathlib import Path

from pytest_gpuverify.common.files import create_result_file
from pytest_gpuverify.config.targets import PYTEST_KINDS, command_argv, junit_path
from pytest_gpuverify.engine.phases import Command, Executed
from pytest_gpuverify.execute.base import ExecutorError
from pytest_gpuverify.place.provenance import move_out
from pytest_gpuverify.records.artifact import PerfRow, ProfileRecord, sha256_file
from pytest_gpuverify.trace.corroborate import corroborate_profile
from pytest_gpuverify.trace.identity import kernel_records, lookup_argv, parse_lookup
from pytest_gpuverify.trace.launches import TraceError
from pytest_gpuverify.trace.readers import read_trace
from pytest_gpuverify.trace.tracers import ToolRun, profile_run, python_of, trace_run

# the stored file's name after bench_<topic>.<stamp>., by format
SUFFIX = {
    "rocpd": "rocpd.db",
    "nsys-sqlite": "nsys.sqlite",
    "kineto-json": "kineto.json.gz",  # never .json: bench_*.json are the artifacts
    "ncu-rep": "ncu-rep",
    "nsys-rep": "nsys-rep",
    "rocprof-compute-tar": "rocprof-compute.tar.gz",
}
LIMIT = 1 << 30  # the largest trace or report moved out


def extra_runs(options, vendor: str, cmd: Command, executed: Executed, handle) -> None:
    """The trace run, then the profiled run, as the options ask; each fills ``executed.profiles``."""
    if options.trace:
        record = _take(cmd, handle, "trace", options.trace_filter or cmd.target.trace_filter, vendor, None)
        executed.profiles.append(record)
        if record.path and not record.problem:
            _code_objects(cmd, handle, executed, record)
    if options.profile:
        executed.profiles.append(_take(cmd, handle, "profile", options.profile_filter, vendor, options.profile))


def _have(handle, cmd: Command):
    def have(tool: str) -> bool:
        try:
            code, _ = handle.capture(["sh", "-c", f"command -v {shlex.quote(tool)}"], env=cmd.env, timeout_s=30)
        except ExecutorError:
            return False
        return code == 0

    return have


def _take(
    cmd: Command, handle, purpose: str, kernel_filter: str | None, vendor: str, tool: str | None
) -> ProfileRecord:
    run_id = f"{cmd.run_id}-{purpose}"
    argv = command_argv(cmd.target, cmd.rel, run_id)
    inside = f"/tmp/gpuverify-{run_id}"
    name = f"{purpose}"
    planned: ToolRun | str = (
        trace_run(vendor, _have(handle, cmd), argv, inside, name)
        if tool is None
        else profile_run(tool, _have(handle, cmd), argv, inside, name, kernel_filter)
    )
    if isinstance(planned, str):
        return ProfileRecord(
            tool=tool or ("rocprofv3" if vendor == "rocm" else "nsys"),
            format="none",
            kernel_filter=kernel_filter,
            purpose=purpose,
            problem=planned,
        )
    record = ProfileRecord(
        tool=planned.tool,
        version=_version(handle, planned, cmd),
        format=planned.format,
        kernel_filter=kernel_filter,
        purpose=purpose,
    )
    side_log = cmd.raw_path.parent / f".{cmd.raw_path.stem}.{purpose}.log"
    try:
        create_result_file(side_log)
        handle.capture(["mkdir", "-p", inside], timeout_s=30)
        ended = handle.stream_to_file(planned.argv, side_log, env=cmd.env, workdir=cmd.workdir, timeout_s=cmd.timeout_s)
        record.exit_code = ended.exit_code
        dest = cmd.raw_path.parent / f"bench_{cmd.topic}.{cmd.stamp}.{purpose}.{SUFFIX[planned.format]}"
        got, why = move_out(handle, planned.output, dest, limit=LIMIT)
        if got is not None:
            record.path, record.sha256, record.bytes = got.name, sha256_file(got), got.stat().st_size
        if ended.timed_out:
            record.problem = f"the {purpose} run under {planned.tool} ran past --gpu-timeout"
        elif ended.exit_code != 0:
            record.problem = (
                f"the {purpose} run under {planned.tool} exited with {ended.exit_code}: {_last_line(side_log)}"
            )
        elif got is None:
            record.problem = why or f"the {purpose} run under {planned.tool} wrote no {planned.output}"
    except (ExecutorError, OSError) as exc:
        record.problem = f"the {purpose} run under {planned.tool} could not run: {exc}"
    finally:
        side_log.unlink(missing_ok=True)
        _remove(handle, [inside, junit_path(run_id)] if cmd.target.kind in PYTEST_KINDS else [inside])
    return record


def _version(handle, planned: ToolRun, cmd: Command) -> str | None:
    try:
        code, out = handle.capture(planned.version_argv, env=cmd.env, timeout_s=60)
    except ExecutorError:
        return None
    lines = out.decode("utf-8", "replace").strip().splitlines()
    return lines[0][:200] if code == 0 and lines else None


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no output"
    return lines[-1][:300] if lines else "no output"


def _remove(handle, paths: list[str]) -> None:
    try:
        handle.capture(["rm", "-rf", *paths], timeout_s=60)
    except ExecutorError:
        pass


def _code_objects(cmd: Command, handle, executed: Executed, record: ProfileRecord) -> None:
    """The code objects the trace's kernels ran from, looked up where the command ran (identity.py)."""
    assert record.path is not None
    try:
        launches = read_trace(cmd.raw_path.parent / record.path, record.format)
    except TraceError:
        return  # the rule says why (corroborate.py)
    roots = [path for var, path in cmd.run_env.caches.items() if var in ("TRITON_CACHE_DIR", "AITER_JIT_DIR")]
    python = python_of(cmd.argv) or "python3"
    try:
        code, out = handle.capture(lookup_argv(python, roots, launches), env=cmd.env, timeout_s=120, limit=16 << 20)
    except ExecutorError as exc:
        executed.notes.append(f"--gpu-trace: the kernels' code objects could not be looked up: {exc}")
        return
    if code != 0:
        executed.notes.append(f"--gpu-trace: the kernels' code objects could not be looked up (exit {code})")
        return
    executed.code_objects = parse_lookup(out)


def settle_trace(executed: Executed, folder: Path, perf: list[PerfRow]) -> None:
    """The trace's rule on the parsed rows (the run record's ``trace_doubts``) and the kernels it dispatched."""
    for record in executed.profiles:
        if record.purpose != "trace":
            continue
        found = corroborate_profile(record, folder, perf)
        executed.trace_doubts, executed.notes = found.doubts, executed.notes + found.notes
        executed.kernels = kernel_records(found.launches, found, *executed.code_objects)
