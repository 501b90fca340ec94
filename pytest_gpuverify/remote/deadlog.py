"""The raw log of a target whose worker died on its GPU host: the worker wrote it there as the command
ran (engine/session.py: ``bench_<topic>.<stamp>.log`` in its result folder) and never handed it back.
The controller copies the newest such log into its own result folder over ssh and says in the
target's INCONCLUSIVE reason where it is: copied (both paths), or left on the host (where, and why)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from pytest_gpuverify.remote.collect import MAX_BYTES  # past this, it stays on the host
from pytest_gpuverify.remote.sshmux import run_ssh

_MARK = "gpuverify-raw-log:"


def fetch_raw_log(
    ssh: list[str], host: str, folder: str | None, topic: str, out_dir: Path, timeout_s: float, since: str | None = None
) -> str:
    """``ssh``: the argv that reaches the host (remote/preflight.py ssh_base); ``since``: the worker's
    stamp before its first target (the folder keeps earlier sessions' logs of the topic: those are
    never this target's). The clause for the reason: where the raw log is now."""
    if not folder:
        return f"its raw log, if the command started, stays on host {host} in its result folder (bench_{topic}.*.log)"
    pattern = f"{shlex.quote(folder)}/bench_{shlex.quote(topic)}.*.log"
    # the newest log of the topic whose stamp (bench_<topic>.<stamp>.log) is not older than `since`
    newest = f"awk -F. -v since={shlex.quote(since or '')} 'since == \"\" || $(NF-1) >= since {{print; exit}}'"
    script = (
        f'f=$(ls -t {pattern} 2>/dev/null | {newest}); [ -n "$f" ] || exit 3; '
        f'[ $(wc -c < "$f") -le {MAX_BYTES} ] || {{ echo "$f"; exit 4; }}; echo "{_MARK}$f"; cat "$f"'
    )
    where = f"{folder}/bench_{topic}.*.log"
    try:
        done = run_ssh([*ssh, script], timeout_s + 5)
    except (OSError, subprocess.TimeoutExpired):
        return f"its raw log, if the command started, stays on host {host} ({where}): the host did not answer"
    if done.returncode == 3:
        return f"no raw log on host {host} ({where}): the command had not started"
    head, _, content = done.stdout.partition(b"\n")
    if done.returncode != 0 or not head.startswith(_MARK.encode()):
        said = f"past {MAX_BYTES >> 20} MiB" if done.returncode == 4 else f"ssh exit {done.returncode}"
        return f"its raw log stays on host {host} ({head.decode(errors='replace').strip() or where}; {said})"
    remote = head[len(_MARK) :].decode(errors="replace").strip()
    local = out_dir / Path(remote).name
    try:
        from pytest_gpuverify.common.files import make_dirs

        make_dirs(out_dir)  # group-shared where its parent is, whatever the umask
        stem, n = f"{local.stem}.from-{host}", 1
        while local.exists():  # never overwritten: .from-<host>, then .from-<host>-2 ...
            local = local.with_name(f"{stem}{'' if n == 1 else f'-{n}'}{local.suffix}")
            n += 1
        local.write_bytes(content)
    except OSError as exc:
        return f"its raw log stays on host {host} ({remote}; not copied here: {exc})"
    return f"its raw log, copied from {host}:{remote}, is {local}"
