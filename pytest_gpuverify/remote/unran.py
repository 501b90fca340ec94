"""The controller's artifact and report for a target of a GPU host that never gave its own: its host
never answered, its worker died or was cut, or the session stopped first. No data is lost: the
target still has an INCONCLUSIVE artifact in the result folder, written like a blocked run's
(``run.ran`` false, the reason in ``run.blocked``), which ``gpuverify check`` re-derives."""

from __future__ import annotations

from pathlib import Path

from pytest_gpuverify.remote.placement import gpus_of, plain_nodeid, target_name, target_path, topic_of


def unran_artifact(nodeid: str, host: str, reason: str, key: str | None, topic: str | None = None):
    """``topic``: the session's --gpu-topic (one target), else the node id's (remote/placement.py)."""
    from pytest_gpuverify import __version__
    from pytest_gpuverify.config.targets import PYTEST, kind_for_path
    from pytest_gpuverify.records.artifact import Artifact, RunRecord, TargetRecord, utc_now

    path = target_path(nodeid)
    is_file = path.endswith(".py")  # else the declaration file: the controller never saw the target's own
    kind = (kind_for_path(Path(path)) or PYTEST) if is_file else "unknown"
    return Artifact(
        plugin_version=__version__,
        key=key,
        topic=topic or topic_of(nodeid),
        ts=utc_now(),
        host=host if host != "-" else None,
        target=TargetRecord(name=target_name(nodeid), kind=kind, path=path if is_file else None),
        verdict="INCONCLUSIVE",
        reasons=[reason],
        run=RunRecord(blocked=[reason], ran=False),
        notes=[
            f"written by the controller: no host gave an artifact for {plain_nodeid(nodeid)} "
            f"(it needs {gpus_of(nodeid)} GPU(s); tied to host {host})"
        ],
    )


def write_unran(
    out_dir: Path, lock: Path | None, nodeid: str, host: str, reason: str, key: str | None, topic: str | None = None
) -> tuple[Path | None, str]:
    """(the artifact's path or None, a problem line or ''): an earlier artifact of the topic is moved
    aside, never overwritten (store.store_artifact)."""
    from pytest_gpuverify.common.files import FileProblem
    from pytest_gpuverify.engine.store import store_artifact

    art = unran_artifact(nodeid, host, reason, key, topic)
    path = out_dir / f"bench_{art.topic}.json"
    try:
        from pytest_gpuverify.common.files import make_dirs

        make_dirs(out_dir)  # group-shared where its parent is, whatever the umask
        path = store_artifact(art, path, lock)  # the lock every writer into the folder takes
    except (FileProblem, OSError) as exc:
        return None, f"{path}: the INCONCLUSIVE artifact of {plain_nodeid(nodeid)} was not written: {exc}"
    return path, ""


def verdict_properties(host: str, reason: str, artifact: Path | None) -> list[tuple[str, str]]:
    return [
        ("gpuverify_verdict", "INCONCLUSIVE"),
        ("gpuverify_host", host),
        ("gpuverify_gpus", "-"),
        ("gpuverify_artifact", str(artifact) if artifact else "-"),
        ("gpuverify_reason", reason),
    ]


def unran_report(nodeid: str, host: str, reason: str, artifact: Path | None):
    """A failed call report with the target's verdict, as a worker would have sent it."""
    import pytest

    path = target_path(nodeid)
    return pytest.TestReport(
        nodeid=nodeid,
        location=(path, None, target_name(nodeid)),
        keywords={},
        outcome="failed",
        longrepr=f"INCONCLUSIVE: {nodeid}\n  - {reason}",
        when="call",
        user_properties=verdict_properties(host, reason, artifact),
    )
