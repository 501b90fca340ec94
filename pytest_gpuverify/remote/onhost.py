"""The worker's side on a GPU host: which Hosts row it serves, and where its targets are.

The env file's repo paths are the host's (the checkout lives there), so a
target given relative to a repo root, or declared in a repo, is found in the Repos rows' checkouts
on the host, whatever folder the controller ran in."""

from __future__ import annotations

import os
from datetime import UTC
from pathlib import Path

from pytest_gpuverify.config.envfile import EnvFile
from pytest_gpuverify.remote.txspec import serving_host


def forget_rootdir_option(environ=os.environ) -> None:
    """The controller passes ``--rootdir`` through ``PYTEST_ADDOPTS`` (remote/txspec.py); once this
    worker has parsed it, it must not reach the pytest runs of the targets this worker starts."""
    if environ.get("PYTEST_ADDOPTS", "").startswith("--rootdir="):
        del environ["PYTEST_ADDOPTS"]


def args_in_checkouts(args: list[str], positional: list[str], env: EnvFile, here: Path) -> None:
    """Rewrite, in place (in ``args`` and in the parsed ``positional``), each path argument that is not
    under ``here`` but is under a Repos row's checkout to that absolute path (``op_tests/test_x.py::case``
    keeps its ``::case``; ``<repo>:<path>`` names the row)."""
    for i, arg in enumerate(list(positional)):
        path, sep, rest = arg.partition("::")
        if not path or Path(path).is_absolute() or (here / path).exists():
            continue
        repo, colon, in_repo = path.partition(":")  # `<repo>:<path>`: a path the controller had in its checkout
        row = env.repo(repo) if colon else None
        if row is not None and row.path is not None:
            found = [row.path / in_repo]
        else:
            found = [row.path / path for row in env.repos if row.path is not None and (row.path / path).exists()]
        if len(found) == 1:
            new = str(found[0]) + sep + rest
            positional[i] = new
            if arg in args:
                args[args.index(arg)] = new


def declarations_on_host(env: EnvFile, names: list[str]):
    """The one declaration file among the Repos rows' checkouts that declares every name in ``names``.
    A name declared in two repos is an error naming both; none: None."""
    from pytest_gpuverify.config.declarations import DeclarationError, find_declarations, load_declarations

    holders: dict[str, list[Path]] = {}
    for row in env.repos:
        if row.path is None or not row.path.is_dir():
            continue
        path = find_declarations(row.path, row.path)
        if path is None:
            continue
        declared = {t.name for t in load_declarations(path).targets}
        for name in names:
            if name in declared:
                holders.setdefault(name, []).append(path)
    for name, paths in holders.items():
        if len(paths) > 1:
            raise DeclarationError(
                paths[0],
                f"--gpu-target {name} is declared in {paths[0]} and {paths[1]}",
                "rename one of them, or run from inside the repo you mean",
            )
    files = {p for paths in holders.values() for p in paths}
    return next(iter(files)) if len(files) == 1 else None


def synced_record(workerinput: dict):
    """--gpu-sync's record, as the controller handed it to this worker (None: no copy)."""
    from pytest_gpuverify.records.artifact import SyncRecord

    data = (workerinput or {}).get("gpuverify_synced")
    return SyncRecord.model_validate(data) if data else None


def hand_back(config, engine) -> None:
    """A worker on a GPU host, at its end: its written files go to the controller (remote/collect.py)."""
    from pytest_gpuverify.remote.collect import FILES_KEY, NOTES_KEY, outcome_files

    if serving_host() and hasattr(config, "workeroutput"):
        config.workeroutput[FILES_KEY], config.workeroutput[NOTES_KEY] = outcome_files(engine.outcomes)


def tell_controller(items, engine) -> None:
    """A worker on a GPU host, at collection: a target needing several GPUs, or with a declared topic,
    says so through its node id (remote/placement.py), the one thing xdist carries from a worker's
    collection; and the worker says where its files are on the host (its result folder, on the wait
    line's channel: remote/waitline.py), so the controller can fetch a raw log the worker leaves there
    when it dies (remote/deadlog.py)."""
    from pytest_gpuverify.remote.placement import marked_nodeid
    from pytest_gpuverify.remote.waitline import FOLDER, send

    if not serving_host():
        return
    for item in items:
        item._nodeid = marked_nodeid(item.nodeid, item.target.gpus, item.target.topic)
    if engine is not None:
        from datetime import datetime

        from pytest_gpuverify.common.clock import STAMP_FORMAT

        send((FOLDER, str(engine.out_dir), datetime.now(UTC).strftime(STAMP_FORMAT)))


CONTROLLER_LOST = "the ssh connection to the controller was lost"


def name_a_lost_controller(config) -> dict:
    """A worker on a GPU host, at its start: execnet stops its work with a SIGINT when its ssh to the
    controller ends; that stop is named as the lost connection in its artifact, not as Ctrl-C. Returns
    the handler it replaced (signal -> handler), put back when the worker's role ends."""
    import signal
    import threading

    from pytest_gpuverify.execute.base import Terminated

    interactor = next((p for p in config.pluginmanager.get_plugins() if type(p).__name__ == "WorkerInteractor"), None)
    channel = getattr(interactor, "channel", None)
    if not serving_host() or channel is None or threading.current_thread() is not threading.main_thread():
        return {}

    def receiving_ended() -> bool:  # execnet's own flag, set when its reader hit the end of the ssh stream
        factory = getattr(channel.gateway, "_channelfactory", None)
        return channel.isclosed() or bool(getattr(factory, "finished", False))

    def on_sigint(signum, frame):
        if receiving_ended():
            raise Terminated(CONTROLLER_LOST)
        raise KeyboardInterrupt

    return {signal.SIGINT: signal.signal(signal.SIGINT, on_sigint)}
