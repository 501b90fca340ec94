"""``gpuverify check``'s provenance half: every field that says what ran, where, held to the others and
to the raw log's trailer (records/raw_log.py).

These are consistency checks: an artifact edited in one field no longer agrees with the fields and
the log lines that state the same fact. They cannot tell a consistent forgery (artifact, log and
sha256 edited together) from the truth; a signature can (:mod:`.signing`).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path, PurePosixPath

from pytest_gpuverify.config.targets import (
    AUTOTUNE_PRINT,
    BENCH,
    JUNIT_DIR,
    MULTICAST_OFF,
    PYTEST_KINDS,
    RunEnvironment,
    import_package,
    kept_from_place,
    multicast_off,
    pythonpath,
)
from pytest_gpuverify.execute.leftovers import MARKER
from pytest_gpuverify.gpu.nvidia_formats import is_uuid
from pytest_gpuverify.lease.grants import visible_within
from pytest_gpuverify.lease.watch import shared_reasons
from pytest_gpuverify.parsers.reading.junit import read_junit
from pytest_gpuverify.place.caches import CACHE_VARS, cache_vars_for
from pytest_gpuverify.place.gitstate import git, git_toplevel
from pytest_gpuverify.place.import_probe import NAMES_VAR, PROBE_VAR
from pytest_gpuverify.place.packages import origin_inside, settle_imports
from pytest_gpuverify.place.provenance import CONTAINER_ENV_RECORDED
from pytest_gpuverify.records.artifact import Artifact
from pytest_gpuverify.records.machine import machine_digest
from pytest_gpuverify.records.raw_log import MACHINE, PREFIX, TIMELINE, WATCH, read_trailer, trailer_fields
from pytest_gpuverify.records.watch_seal import clock_consistency, sealed_watch, watch_differences
from pytest_gpuverify.verify.times import SLACK_S, stamp_problems, timeline_problems, when

_PYTEST_FLAGS = ["-q", "-rAR", "-p", "no:cacheprovider"]
_PYTEST_FLAGS_BEFORE = ["-q", "-rA", "-p", "no:cacheprovider"]  # what engines wrote before they showed retries


def provenance_problems(art: Artifact, artifact_path: Path, raw: Path | None, gathered: bool = False) -> list[str]:
    ran = art.run.ran if art.run is not None else bool(art.raw_output)  # schema 1: no record
    problems = _trailer(art, raw) + _junit(art, artifact_path) + _times(art, artifact_path)
    problems += [] if gathered else _key(art, artifact_path)
    problems += stamp_problems(art) + timeline_problems(art) + _repos(art, ran)
    if not ran:
        return problems + _never_ran(art)
    problems += _command(art) + _gpus(art) + _env_and_imports(art) + _watch(art)
    return problems + (_versions(art) if art.run is not None else [])


def _trailer(art: Artifact, raw: Path | None) -> list[str]:
    if raw is None or art.run is None or not raw.exists():
        return []
    fields, why = read_trailer(raw)
    if fields is None:
        # written by every engine of schema 3; an older log without it says nothing either way
        assert why is not None  # read_trailer says why whenever it finds no trailer
        return [why] if art.schema_version >= 3 or _has_trailer_anywhere(raw) else []
    run = art.run
    ours = trailer_fields(
        exit_code=run.exit_code,
        timed_out=run.timed_out,
        interrupted=run.interrupted,
        container_died=run.container_died,
        host=art.host,
        container=art.container,
        gpus=[g.index for g in art.gpus],
        timeline=art.timeline.model_dump() if art.timeline else None,
    )
    field_of = {
        "exit_code": "run.exit_code",
        "timed_out": "run.timed_out",
        "interrupted": "run.interrupted",
        "container_died": "run.container_died",
        "gpus": "gpus[].index",
    }
    sealed = fields.pop(TIMELINE, ours[TIMELINE])  # a log sealed before the timeline was: nothing to hold it to
    sealed_in = WATCH in fields  # ... or before the watch was (unsealed_watch)
    watch = fields.pop(WATCH, None)
    machine = _sealed_machine(art, fields.pop(MACHINE, None))
    problems = [
        f"{field_of.get(k, k)} is {ours[k]!r}, the raw output's trailer says {fields[k]!r}"
        for k in fields
        if ours[k] != fields[k]
    ]
    problems += _sealed_timeline(ours[TIMELINE], sealed) + machine
    return problems + (watch_differences(sealed_watch(art.watch), watch) if sealed_in else [])


def unsealed_watch(art: Artifact, artifact_path: Path) -> bool:
    """The raw log has a trailer sealed before the watch was: its watch is held to nothing there."""
    raw = artifact_path.parent / art.raw_output if art.raw_output else None
    if raw is None or art.run is None or not art.watch or not raw.exists():
        return False
    fields, _ = read_trailer(raw)
    return fields is not None and WATCH not in fields


def _sealed_machine(art: Artifact, sealed: object) -> list[str]:
    """The machine record as the trailer seals it (its digest): an engine that records one seals it."""
    ours = machine_digest(art.machine)
    if ours == sealed:
        return []
    if sealed is None:
        return ["machine is recorded, the raw output's trailer seals none: the record was added after the run"]
    if ours is None:
        return ["machine is missing, the raw output's trailer seals one: the record was removed"]
    return ["machine differs from the record the raw output's trailer seals (its sha256): it was edited"]


def _sealed_timeline(ours: dict | None, sealed: object) -> list[str]:
    """The timeline as the trailer has it, each time named where they differ."""
    if not isinstance(ours, dict) or not isinstance(sealed, dict) or set(ours) != set(sealed):
        return [] if ours == sealed else [f"timeline is {ours!r}, the raw output's trailer says {sealed!r}"]
    return [
        f"timeline.{k} is {ours[k]}, the raw output's trailer says {sealed[k]}" for k in ours if ours[k] != sealed[k]
    ]


def _key(art: Artifact, artifact_path: Path) -> list[str]:
    """An artifact of a ticket lies in that ticket's folder (<tickets>/KEY/); one of no ticket anywhere."""
    folder = artifact_path.resolve().parent.name
    if art.key is not None and art.key != folder:
        return [f"key is {art.key!r}, but the artifact lies in folder {folder!r}"]
    return []


def _junit(art: Artifact, artifact_path: Path) -> list[str]:
    """The inner pytest's own report: failed or erred tests make pytest exit non-zero."""
    if not art.junit_xml:
        return []
    path = artifact_path.parent / art.junit_xml
    if not path.exists():
        return [f"junit_xml {art.junit_xml} is missing"]
    report = read_junit(path)
    bad = report.counts.failed + report.counts.errors - report.retried_passes  # a retry that passed exits 0
    exit_code = art.run.exit_code if art.run is not None else art.exit_code
    if report.problem is None and bad and exit_code == 0:
        return [f"run.exit_code is 0, but the JUnit report has {report.counts.describe()} (pytest exits 1 then)"]
    return []


def _has_trailer_anywhere(raw: Path) -> bool:
    with open(raw, "rb") as fh:
        fh.seek(max(0, raw.stat().st_size - (1 << 16)))
        return PREFIX in fh.read()


def _times(art: Artifact, artifact_path: Path) -> list[str]:
    problems = []
    start, end = when(art.ts), when(art.finished_ts)
    if start is None:
        problems.append(f"ts {art.ts!r} is not an ISO time")
    if art.finished_ts is not None and end is None:
        problems.append(f"finished_ts {art.finished_ts!r} is not an ISO time")
    if start and end:
        if end < start:
            problems.append(f"finished_ts {art.finished_ts} is before ts {art.ts}")
        elif art.duration_s is not None and art.duration_s > (end - start).total_seconds() + SLACK_S:
            problems.append(f"duration_s {art.duration_s} is longer than ts to finished_ts")
        elif art.duration_s is not None and (end - start).total_seconds() > art.duration_s + SLACK_S:
            # both are read at the run's start and end, on the wall and the monotonic clock
            problems.append(
                f"ts to finished_ts is {(end - start).total_seconds():.3f} s, duration_s is {art.duration_s}"
            )
    named = [("raw_output", art.raw_output), ("junit_xml", art.junit_xml)]
    for field, name in named:
        if name and not Path(name).name.startswith(f"bench_{art.topic}."):
            problems.append(f"{field} {name} is not named after topic {art.topic!r}")
    if not artifact_path.name.startswith(f"bench_{art.topic}"):
        problems.append(f"topic is {art.topic!r}, but the file is {artifact_path.name}")
    return problems


def _repos(art: Artifact, ran: bool) -> list[str]:
    problems = []
    for i, repo in enumerate(art.repos):
        if repo.dirty is False and repo.dirty_paths:
            problems.append(f"repos[{i}].dirty is false, but it lists dirty_paths {repo.dirty_paths[:3]}")
        if repo.dirty and not repo.dirty_paths:
            problems.append(f"repos[{i}].dirty is true, but it lists no dirty_paths")
        if repo.dirty and ran and not any("allowed by --gpu-allow-dirty" in n for n in art.notes):
            problems.append(f"repos[{i}] is dirty and the command ran, but no note says --gpu-allow-dirty allowed it")
        if repo.sha and _at_hand(repo.path):  # the repo is here: the commit must be in it
            if git(Path(repo.path), "cat-file", "-e", f"{repo.sha}^{{commit}}") is None:
                problems.append(f"repos[{i}].sha {repo.sha} is not a commit of {repo.path}")
    if ran and art.target and art.target.path:
        if len(art.repos) != 1:
            problems.append(f"the command ran, but repos has {len(art.repos)} entries (the engine records one)")
        elif not _under(art.target.path, art.repos[0].path):
            problems.append(f"target.path {art.target.path} is not inside repos[0].path {art.repos[0].path}")
    return problems


def _at_hand(path: str) -> bool:
    """A git checkout whose top is ``path``, on this machine, that this user may read (another user's
    private checkout is not at hand: the commit cannot be looked up there)."""
    try:
        top = git_toplevel(Path(path)) if Path(path).is_dir() else None
        return top is not None and top.resolve() == Path(path).resolve()
    except OSError:
        return False


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _never_ran(art: Artifact) -> list[str]:
    said = [("command", art.command), ("gpus", art.gpus), ("gpu.index", art.gpu.index), ("env", art.env)]
    return [f"{name} is recorded, but the command never ran" for name, value in said if value]


def _command(art: Artifact) -> list[str]:
    """The command must be what the target and its args give (targets.command_argv)."""
    target = art.target
    if not art.command or target is None:
        return ["command is null, but the command ran"] if target is not None else []
    try:
        argv = shlex.split(art.command)
    except ValueError:
        return [f"command {art.command!r} is not a shell command line"]
    why = f"command is {art.command!r}, target {target.name} ({target.kind}) with its args gives "
    args = list(target.args)
    if target.kind == BENCH and target.command is None and art.schema_version < 3:
        return []  # schema 2 kept no declared command to compare with
    if target.kind == BENCH and target.command:
        expected = [*target.command, *args]
        return [] if argv == expected else [why + repr(shlex.join(expected))]
    if target.kind in PYTEST_KINDS:
        head, junit = ["python3", "-m", "pytest"], f"--junitxml={JUNIT_DIR}/"
        rel = argv[3] if len(argv) > 3 else ""
        flags = argv[4:8] if argv[4:8] == _PYTEST_FLAGS_BEFORE else _PYTEST_FLAGS  # -rA: an engine before -rAR
        ok = (
            argv[:3] == head
            and argv[4:8] == flags
            and len(argv) > 8
            and argv[8].startswith(junit)
            and argv[9:] == args
            and _names(target.path, rel)
            and _stamped(argv[8], art.raw_output)
        )
        shown = shlex.join([*head, "<path>", *flags, f"{junit}<this run>.xml", *args])
        return [] if ok else [why + repr(shown)]
    rel = argv[1] if len(argv) > 1 else ""
    ok = argv[:1] == ["python3"] and argv[2:] == args and _names(target.path, rel)
    return [] if ok else [why + repr(shlex.join(["python3", "<path>", *args]))]


def _names(target_path: str | None, rel: str) -> bool:
    """The command's relative path names the target's file."""
    if not target_path or not rel or rel.startswith("/") or ".." in PurePosixPath(rel).parts:
        return False
    return target_path == rel or target_path.endswith("/" + rel)


def _stamped(junit_arg: str, raw_output: str | None) -> bool:
    """The JUnit report's run id starts with the log's time stamp (both come from one run)."""
    run_id = junit_arg.rsplit("/", 1)[-1]
    stamp = (raw_output or "").rsplit(".", 2)[-2] if (raw_output or "").count(".") >= 2 else ""
    return bool(stamp) and run_id.startswith(stamp + "-")


def _gpus(art: Artifact) -> list[str]:
    if not art.gpus:
        return ["gpus is empty, but the command ran on a GPU"]
    problems = []
    if art.gpu != art.gpus[0]:
        problems.append("gpu is not gpus[0]")
    indices = [g.index for g in art.gpus]
    if len(set(indices)) != len(indices):
        problems.append(f"gpus[].index {indices} names a GPU twice")
    if art.host_gpus is None:
        if art.schema_version >= 3 and not any(n.startswith("GPU names unknown") for n in art.notes):
            problems.append("host_gpus is null, but the host's GPUs were read")
    for i, g in enumerate(art.gpus):
        if g.index is None or g.index < 0 or (art.host_gpus is not None and g.index >= art.host_gpus):
            problems.append(f"gpus[{i}].index {g.index} is not a GPU of a host with {art.host_gpus} GPUs")
        if g.hip_index is not None and g.hip_index != g.index:
            problems.append(f"gpus[{i}].hip_index {g.hip_index} is not its index {g.index}")
        if g.lock_path is None:
            problems.append(f"gpus[{i}].lock_path is null, but the command ran under a lock")
    locks = [g.lock_path for g in art.gpus]
    if len(set(locks)) != len(locks):
        problems.append(f"gpus[].lock_path {locks} names one lock for two GPUs")
    return problems


def _marker_matches(marker: str, raw_output: str | None) -> bool:
    """leftovers.run_marker: ``<the log's time stamp>-<pid>-<8 hex>``."""
    stamp = (raw_output or "").rsplit(".", 2)[-2] if (raw_output or "").count(".") >= 2 else ""
    return bool(stamp) and re.fullmatch(re.escape(stamp) + r"-\d+-[0-9a-f]{8}", marker) is not None


def _env_and_imports(art: Artifact) -> list[str]:
    """The environment the engine gives a command (targets.RunEnvironment), rebuilt from the other fields."""
    target, env = art.target, art.env
    kind = target.kind if target else ""
    nvidia = any((g.arch or "").startswith("sm_") for g in art.gpus)
    var = "CUDA_VISIBLE_DEVICES" if nvidia else "HIP_VISIBLE_DEVICES"
    by_uuid = nvidia and all(is_uuid(g.uuid) for g in art.gpus)  # as the NVIDIA backend's visible_value
    visible = ",".join(str(g.uuid if by_uuid else g.index) for g in art.gpus)
    outside = [g.index for g in art.gpus if art.scheduler is not None and g.index not in art.scheduler.granted]
    within = None if outside else visible_within([g.index for g in art.gpus if g.index is not None], art.scheduler)
    if within is not None:  # a grant that an inherited variable applies: positions in it (grants.py)
        visible = ",".join(map(str, within))
    if art.fresh_container is not None and art.fresh_container.visible:  # its GPUs are 0..n-1 inside (ephemeral.py)
        visible = art.fresh_container.visible
    wt = _worktree(kind, env.get("PYTHONPATH", ""))
    own_path = pythonpath(kind, wt)
    schema5 = art.schema_version >= 5
    caches = dict(art.cache_dirs)
    expected = RunEnvironment(
        visible_var=var,
        visible_value=visible,
        pythonpath=own_path,
        kind=kind,
        arch=art.gpu.arch,
        caches=caches,
        declared=dict(target.env) if target else {},
        kept=kept_from_place(env),
        # artifacts written before the engine turned NVLink multicast off carry none of the three
        multicast=multicast_off("nvidia" if nvidia and any(k in env for k in MULTICAST_OFF) else "rocm", env),
    ).as_env()  # the place's own value is recorded as it ran
    if art.autotune is None and AUTOTUNE_PRINT not in env:  # written before the engine turned the printout on
        expected.pop(AUTOTUNE_PRINT, None)
    if not schema5:  # before the environment was chosen per kind, every command got aiter's and pandas' variables
        expected.update({"COLUMNS": "10000", **({"GPU_ARCHS": art.gpu.arch} if art.gpu.arch else {})})
    path = env.get("PYTHONPATH", "")
    if schema5 and path.startswith(own_path + ":"):  # the place's own PYTHONPATH, kept after the worktree's
        expected["PYTHONPATH"] = path
    problems = [
        f"env.{k} is {env.get(k)!r}, the run's GPUs, worktree and caches give {v!r}"
        for k, v in expected.items()
        if env.get(k) != v
    ]
    if outside and art.scheduler is not None:
        problems.append(
            f"gpus {outside} are not among the GPUs granted ({art.scheduler.read_from}: {art.scheduler.granted})"
        )
    problems += [
        f"env.{k} is not a variable the engine sets or records"
        for k in env
        if k not in expected and k not in CONTAINER_ENV_RECORDED and k not in (MARKER, PROBE_VAR, NAMES_VAR)
    ]
    if NAMES_VAR in env and env[NAMES_VAR].split(",") != list(art.import_origins):
        problems.append(
            f"env.{NAMES_VAR} is {env[NAMES_VAR]!r}, but import_origins records {sorted(art.import_origins)}"
        )
    if MARKER in env and not _marker_matches(env[MARKER], art.raw_output):
        problems.append(f"env.{MARKER} {env[MARKER]!r} is not this run's marker (its log's time, a pid, a token)")
    engine_sets = (
        set(cache_vars_for(kind)) if schema5 else set(CACHE_VARS) if art.schema_version >= 2 else {"AITER_JIT_DIR"}
    )  # schema 1: only that one
    if not (set(caches) == engine_sets if schema5 else engine_sets <= set(caches) <= set(CACHE_VARS)):
        problems.append(f"cache_dirs has {sorted(art.cache_dirs)}, the engine sets {sorted(engine_sets)}")
    if art.workdir is None or not _under(art.workdir, wt):
        problems.append(f"workdir {art.workdir} is not in the worktree {wt} that PYTHONPATH names")
    return problems + _imports(art, kind, wt)


def _imports(art: Artifact, kind: str, wt: str) -> list[str]:
    """The packages under test: the declared ones, else the kind's own, were checked; every origin recorded
    lies in the worktree (a default read from the repo's pyproject.toml may be one package or none)."""
    declared = art.target.packages if art.target is not None else None
    package = import_package(kind)
    problems = []
    if declared is not None and set(art.imports) != set(declared):
        problems.append(f"imports has {sorted(art.imports)}, the declaration names {sorted(declared)}")
    elif declared is None and package is not None and set(art.imports) != {package}:
        problems.append(f"imports has {sorted(art.imports)}, a {kind} target checks {package!r}")
    elif declared is None and package is None and (len(art.imports) > 1 or art.schema_version < 5 and art.imports):
        problems.append(f"imports {sorted(art.imports)}, but a {kind} target checks at most its project's package")
    names = list(declared) if declared is not None else [package] if package is not None else None
    if art.import_origins and names is not None and set(art.import_origins) != set(names):
        problems.append(f"import_origins has {sorted(art.import_origins)}, the packages under test are {sorted(names)}")
    if art.import_origins or (art.run is not None and art.run.imports_outside):
        return problems + _import_record(art, wt, declared is not None or package is not None)
    for name, origin in sorted(art.imports.items()):
        if not origin_inside(origin, wt):
            problems.append(f"imports.{name} is {origin}, outside the worktree {wt}: the command would not have run")
    return problems


def _import_record(art: Artifact, wt: str, required: bool) -> list[str]:
    """The run's own record of its imports (``import_origins``) gives ``imports`` and the reasons of
    ``run.imports_outside``, by the engine's rule (packages.settle_imports)."""
    imports, reasons, _ = settle_imports(art.import_origins, wt, required)
    problems = []
    for name in sorted(set(imports) | set(art.imports)):
        ours, theirs = imports.get(name), art.imports.get(name)
        if name not in art.imports or name not in imports or ours != theirs:
            where = ", outside the worktree " + wt if theirs and not origin_inside(theirs, wt) else ""
            problems.append(f"imports.{name} is {theirs}{where}, the run's import record (import_origins) gives {ours}")
    if art.run is not None and art.run.imports_outside != reasons:
        problems.append("run.imports_outside does not match the run's import record (import_origins)")
    return problems


def _worktree(kind: str, path: str) -> str:
    first = path.split(":", 1)[0]
    return first.removesuffix("/python") if pythonpath(kind, "W") != "W" else first


def _versions(art: Artifact) -> list[str]:
    v, unknowns = art.versions, art.run.unknowns if art.run else []
    problems = []
    for name in ("torch", "triton"):
        said_null = any(u.startswith(f"versions: {name} is null") for u in unknowns)
        if said_null and getattr(v, name) is not None:
            problems.append(f"versions.{name} is {getattr(v, name)!r}, but run.unknowns says it is null")
        if not said_null and getattr(v, name) is None and v.python is not None:
            problems.append(f"versions.{name} is null, but run.unknowns does not say why")
    if any(u.startswith("versions: rocm is null") for u in unknowns) and (v.rocm or v.cuda):
        problems.append("versions.rocm or versions.cuda is set, but run.unknowns says neither was found")
    if v.python is None and not any(u.startswith("versions: could not be read") for u in unknowns):
        problems.append("versions.python is null, but run.unknowns does not say the versions could not be read")
    nvidia = any((g.arch or "").startswith("sm_") for g in art.gpus)
    if nvidia and v.hip is not None:
        problems.append(f"versions.hip is {v.hip!r} on an NVIDIA GPU ({art.gpu.arch})")
    if not nvidia and art.gpu.arch and v.cuda is not None:
        problems.append(f"versions.cuda is {v.cuda!r} on an AMD GPU ({art.gpu.arch})")
    return problems


def _watch(art: Artifact) -> list[str]:
    """The held GPUs were watched while the command ran, and the run record's shared-GPU reasons are the
    watch's foreign processes (schema 5 on)."""
    if art.schema_version < 5 or art.run is None:
        return []
    problems = []
    if art.run.ran and not art.watch:
        problems.append("watch is empty, but the command ran: its GPUs were watched while it ran")
    held = {g.index for g in art.gpus}
    problems += [
        f"watch: foreign pid {p.pid} on gpu {p.gpu}, a GPU the run did not hold"
        for w in art.watch
        for p in w.foreign
        if p.gpu not in held
    ]
    if art.run.shared != shared_reasons(art.watch):
        problems.append("run.shared does not match the foreign processes in watch")
    return problems + clock_consistency(art.watch)
