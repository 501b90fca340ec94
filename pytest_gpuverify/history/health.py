"""The health of the machines: per GPU (by UUID) the timeouts, interrupts, dead containers and uncorrected ECC
errors of the runs it held, and per host the share of runs that got no GPU (NO_GPU), as the store keeps them
(``gpu_runs``, filled as each run is added). A GPU past a threshold (:class:`Thresholds`) is skipped by the
picker of the next sessions that name the store and listed by ``gpuverify doctor``, until
``gpuverify history clear-health --gpu UUID`` records who cleared it: it is then judged on its later runs only.

Reading is one query for the GPUs (:func:`unhealthy`), made once at a session's start."""

from __future__ import annotations

import getpass
import os
import socket
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, func, insert, or_, select

from pytest_gpuverify.history.db import transaction
from pytest_gpuverify.history.schema import gpu_clears, gpu_runs
from pytest_gpuverify.records.artifact import NO_GPU, Artifact, utc_now

ENV = "GPUVERIFY_HEALTH"  # the thresholds where no --gpu-health (nor ini gpu_health) gives them
HEALTH_STORE_ENV = "GPUVERIFY_HEALTH_STORE"  # the store health is read from, where runs are posted to a service
DEFAULT_SPEC = "timeouts=3/20,ecc=1,no-gpu=50%/20"
CLEAR_HINT = "gpuverify history clear-health --gpu {uuid}"


class GpuRun(BaseModel):
    """What one run did to one GPU it held (``uuid`` None: the run got no GPU, ``no_gpu``)."""

    model_config = ConfigDict(extra="forbid")

    uuid: str | None = None
    index: int | None = None
    name: str | None = None
    host: str | None = None
    timed_out: bool = False
    interrupted: str | None = None
    container_died: bool = False
    no_gpu: bool = False
    ecc_corrected: int | None = None
    ecc_uncorrected: int | None = None


def gpu_runs_of(art: Artifact) -> list[GpuRun]:
    """One :class:`GpuRun` per GPU the artifact's run held (known by its UUID); one without a UUID when the
    run got no GPU; none when it held GPUs whose UUIDs were not read (nothing to keep them by)."""
    run = art.run
    blocked = (run.blocked if run else []) + art.reasons
    if any(b.startswith(NO_GPU) for b in blocked):
        return [GpuRun(host=art.host, no_gpu=True)]
    slices = art.runs
    timed_out = art.timed_out or bool(run and run.timed_out) or any(s.timed_out for s in slices)
    interrupted = (run.interrupted if run else None) or next((s.interrupted for s in slices if s.interrupted), None)
    died = bool(run and run.container_died) or any(s.container_died for s in slices)
    machine = {g.uuid: g for g in art.machine.gpus if g.uuid} if art.machine else {}
    by_index = {g.index: g for g in art.machine.gpus} if art.machine else {}
    found: list[GpuRun] = []
    for gpu in art.gpus or [art.gpu]:
        if not gpu.uuid or any(f.uuid == gpu.uuid for f in found):
            continue
        read = machine.get(gpu.uuid) or by_index.get(gpu.index if gpu.index is not None else -1)
        found.append(
            GpuRun(
                uuid=gpu.uuid,
                index=gpu.index,
                name=gpu.name,
                host=art.host,
                timed_out=timed_out,
                interrupted=interrupted,
                container_died=died,
                ecc_corrected=read.ecc_corrected if read else None,
                ecc_uncorrected=read.ecc_uncorrected if read else None,
            )
        )
    return found


def store_gpu_runs(conn: Connection, run_id: int, ts: str, found: list[GpuRun]) -> None:
    """The run's rows, in the caller's transaction (the run's own insert)."""
    if found:
        conn.execute(
            insert(gpu_runs),
            [
                {
                    "run_id": run_id,
                    "gpu_uuid": g.uuid,
                    "gpu_index": g.index,
                    "gpu_name": g.name,
                    "host": g.host,
                    "ts": ts,
                    "timed_out": int(g.timed_out),
                    "interrupted": g.interrupted,
                    "container_died": int(g.container_died),
                    "no_gpu": int(g.no_gpu),
                    "ecc_corrected": g.ecc_corrected,
                    "ecc_uncorrected": g.ecc_uncorrected,
                }
                for g in found
            ],
        )


# --- thresholds ---


class HealthSpecError(ValueError):
    """A thresholds text that cannot be read; the message names the part and the fix."""


@dataclass(frozen=True)
class Thresholds:
    """When a GPU is unhealthy: ``timeouts`` timeouts (a hung kernel ends in one) or dead containers in its
    last ``window`` runs; ``ecc`` new uncorrected ECC errors; a host whose last ``no_gpu_window`` runs got no
    GPU at a share of ``no_gpu`` or more is listed (no GPU of it is to blame). ``off``: nothing is judged."""

    timeouts: int = 3
    window: int = 20
    ecc: int = 1
    no_gpu: float = 0.5
    no_gpu_window: int = 20
    off: bool = False


def parse_thresholds(text: str | None, source: str = "--gpu-health") -> Thresholds:
    """``timeouts=N/RUNS,ecc=N,no-gpu=P%/RUNS`` (any of them, the rest as :data:`DEFAULT_SPEC`), or ``off``."""
    found = Thresholds()
    if text is None or not text.strip():
        return found
    if text.strip().lower() == "off":
        return Thresholds(off=True)
    values = dict(timeouts=found.timeouts, window=found.window, ecc=found.ecc)
    share, share_window = found.no_gpu, found.no_gpu_window
    fix = f"Fix: {source}=off, or parts of {DEFAULT_SPEC!r}"
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, _, value = part.partition("=")
        key = key.strip().lower()
        try:
            if key == "timeouts":
                count, _, runs = value.partition("/")
                values["timeouts"], values["window"] = int(count), int(runs or found.window)
            elif key == "ecc":
                values["ecc"] = int(value)
            elif key == "no-gpu":
                rate, _, runs = value.partition("/")
                share = float(rate.rstrip("%")) / 100 if rate.strip().endswith("%") else float(rate)
                share_window = int(runs or found.no_gpu_window)
            else:
                raise HealthSpecError(f"{source}: unknown threshold {key!r} in {text!r}. {fix}")
        except ValueError as exc:
            if isinstance(exc, HealthSpecError):
                raise
            raise HealthSpecError(f"{source}: {part!r} is not a number. {fix}") from None
    if min(values.values()) < 1 or share_window < 1 or values["window"] < values["timeouts"] or not 0 < share <= 1:
        raise HealthSpecError(f"{source}: {text!r}: counts must be 1 or more, within their runs, shares 0-100%. {fix}")
    return Thresholds(values["timeouts"], values["window"], values["ecc"], share, share_window)


def thresholds_text(t: Thresholds) -> str:
    if t.off:
        return "off"
    return f"timeouts={t.timeouts}/{t.window},ecc={t.ecc},no-gpu={t.no_gpu:.0%}/{t.no_gpu_window}"


# --- judging ---


@dataclass(frozen=True)
class GpuHealth:
    uuid: str
    name: str | None
    host: str | None
    index: int | None
    runs: int  # judged: its last ``window`` runs since its last clear
    timeouts: int
    interrupts: int
    ecc_new: int  # uncorrected ECC errors past the count at its last clear
    reasons: tuple[str, ...]

    def line(self) -> str:
        where = f"gpu {self.index} of {self.host or '?'}" if self.index is not None else (self.host or "?")
        return (
            f"{self.uuid} ({self.name or '?'}, {where}): {'; '.join(self.reasons)}. "
            f"Fix: look at the GPU, then {CLEAR_HINT.format(uuid=self.uuid)}"
        )


def _last_clears():
    newest = func.row_number().over(partition_by=gpu_clears.c.gpu_uuid, order_by=gpu_clears.c.cleared_at.desc())
    ranked = select(gpu_clears, newest.label("n")).subquery()
    return select(ranked).where(ranked.c.n == 1).subquery("last_clear")


def gpu_records(conn: Connection, window: int) -> list[dict]:
    """Each GPU's newest ``window`` runs since its last clear, with that clear's ECC count: one query."""
    clear = _last_clears()
    newest = func.row_number().over(
        partition_by=gpu_runs.c.gpu_uuid, order_by=(gpu_runs.c.ts.desc(), gpu_runs.c.run_id.desc())
    )
    since = (
        select(gpu_runs, newest.label("n"), clear.c.ecc_uncorrected.label("ecc_at_clear"))
        .outerjoin(clear, clear.c.gpu_uuid == gpu_runs.c.gpu_uuid)
        .where(gpu_runs.c.gpu_uuid.is_not(None), or_(clear.c.cleared_at.is_(None), gpu_runs.c.ts > clear.c.cleared_at))
        .subquery()
    )
    query = select(since).where(since.c.n <= window).order_by(since.c.gpu_uuid, since.c.n)
    return [dict(r) for r in conn.execute(query).mappings()]


def judged(records: list[dict], t: Thresholds) -> list[GpuHealth]:
    """The GPUs past a threshold, from :func:`gpu_records`'s rows."""
    by_gpu: dict[str, list[dict]] = {}
    for r in records:
        by_gpu.setdefault(r["gpu_uuid"], []).append(r)
    found = []
    for uuid, rows in by_gpu.items():
        newest = rows[0]
        timeouts = sum(1 for r in rows if r["timed_out"] or r["container_died"])
        interrupts = sum(1 for r in rows if r["interrupted"])
        counts = [r["ecc_uncorrected"] for r in rows if r["ecc_uncorrected"] is not None]
        ecc_new = max(0, max(counts, default=0) - (newest["ecc_at_clear"] or 0))
        reasons = []
        if timeouts >= t.timeouts:
            reasons.append(f"{timeouts} timeout(s) or dead container(s) in its last {len(rows)} run(s)")
        if ecc_new >= t.ecc:
            reasons.append(f"{ecc_new} uncorrected ECC error(s)")
        if reasons:
            found.append(
                GpuHealth(
                    uuid,
                    newest["gpu_name"],
                    newest["host"],
                    newest["gpu_index"],
                    len(rows),
                    timeouts,
                    interrupts,
                    ecc_new,
                    tuple(reasons),
                )
            )
    return found


def unhealthy(conn: Connection, t: Thresholds) -> list[GpuHealth]:
    return [] if t.off else judged(gpu_records(conn, t.window), t)


def no_gpu_hosts(conn: Connection, t: Thresholds) -> list[str]:
    """A line per host whose newest runs got no GPU at the threshold's share or more."""
    if t.off:
        return []
    per_run = (
        select(
            gpu_runs.c.host,
            gpu_runs.c.run_id,
            func.max(gpu_runs.c.ts).label("ts"),
            func.max(gpu_runs.c.no_gpu).label("no"),
        )
        .where(gpu_runs.c.host.is_not(None))
        .group_by(gpu_runs.c.host, gpu_runs.c.run_id)
        .subquery()
    )
    newest = func.row_number().over(
        partition_by=per_run.c.host, order_by=(per_run.c.ts.desc(), per_run.c.run_id.desc())
    )
    ranked = select(per_run, newest.label("n")).subquery()
    query = (
        select(ranked.c.host, func.count().label("runs"), func.sum(ranked.c.no).label("no_gpu"))
        .where(ranked.c.n <= t.no_gpu_window)
        .group_by(ranked.c.host)
        .order_by(ranked.c.host)
    )
    return [
        f"{r.host}: {r.no_gpu} of its last {r.runs} run(s) got no GPU (NO_GPU). Fix: look for GPUs held by "
        "others or unhealthy, or run fewer sessions at once"
        for r in conn.execute(query)
        if r.runs and r.no_gpu / r.runs >= t.no_gpu
    ]


def clear(conn: Connection, uuid: str, by: str | None = None) -> tuple[str, int]:
    """Record that ``uuid`` was cleared now, by ``by`` (default: user@host); (who, its runs stored so far)."""
    who = by or f"{getpass.getuser()}@{socket.gethostname()}"
    with transaction(conn):
        runs = conn.execute(select(func.count()).where(gpu_runs.c.gpu_uuid == uuid)).scalar_one()
        ecc = conn.execute(select(func.max(gpu_runs.c.ecc_uncorrected)).where(gpu_runs.c.gpu_uuid == uuid)).scalar()
        conn.execute(
            insert(gpu_clears).values(gpu_uuid=uuid, cleared_by=who, cleared_at=utc_now(), ecc_uncorrected=ecc)
        )
    return who, int(runs)


def clears(conn: Connection, uuid: str | None = None) -> list[dict]:
    query = select(gpu_clears).order_by(gpu_clears.c.cleared_at)
    if uuid is not None:
        query = query.where(gpu_clears.c.gpu_uuid == uuid)
    return [dict(r) for r in conn.execute(query).mappings()]


def thresholds_from(option: str | None, source: str = "--gpu-health") -> Thresholds:
    """The option's text, else ``$GPUVERIFY_HEALTH``, else the defaults."""
    if option:
        return parse_thresholds(option, source)
    return parse_thresholds(os.environ.get(ENV), f"${ENV}")


__all__ = [
    "DEFAULT_SPEC",
    "GpuHealth",
    "GpuRun",
    "HealthSpecError",
    "Thresholds",
    "clear",
    "gpu_runs_of",
    "no_gpu_hosts",
    "parse_thresholds",
    "store_gpu_runs",
    "thresholds_from",
    "unhealthy",
]


def session_health(store: object, spec: str | None) -> tuple[dict[str, str], str | None]:
    """For a session's picker: the unhealthy GPUs of ``store`` (uuid -> why), read in one query, and a line
    when the store could not be read (the session runs on, judging no GPU)."""
    from pathlib import Path

    from pytest_gpuverify.history.db import StoreError, guard, locate, open_store, shown
    from pytest_gpuverify.history.names import is_service, is_url

    try:
        t = thresholds_from(spec)
    except HealthSpecError as exc:
        return {}, f"GPU health not judged: {exc}"
    name = locate(str(store))
    if t.off or (not is_url(name) and not Path(name).exists()):
        return {}, None  # nothing recorded yet: every GPU is healthy
    if is_service(name):
        return {}, (
            f"GPU health not judged: {shown(name)} is an ingest service, which takes runs only. Fix: "
            f"set ${HEALTH_STORE_ENV} to the service's database for the picker to read"
        )
    try:
        conn = open_store(name, reading=True)
        try:
            with guard(name, writing=False):
                found = unhealthy(conn, t)
        finally:
            conn.close()
    except (StoreError, OSError) as exc:
        return {}, f"GPU health not judged: {exc}"
    return {g.uuid: f"{'; '.join(g.reasons)} (clear: {CLEAR_HINT.format(uuid=g.uuid)})" for g in found}, None
