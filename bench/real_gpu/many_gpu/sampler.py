"""The independent witness of the many-GPU runs: every 50 ms, which runs use which GPU, read three ways
that share nothing with the plugin's own records:

- ``nvml``: NVML's compute process list per GPU (real NVIDIA hosts), each pid named by the run marker
  in its /proc environ (``pid:N`` where that is unreadable: a process of another namespace);
- ``env``: every process under /proc whose environ holds a run marker, on the GPUs its visibility
  variable names (UUIDs mapped to indices), so a CPU stand-in shows too;
- ``locks``: the holders of each GPU's lock file (/proc/locks by inode), read before and after the
  process reads.

One JSON line per sample into OUT; the first line maps the GPUs. Stops when STOP_FILE exists.

    python3 sampler.py OUT LOCK_DIR STOP_FILE [--interval 0.05] [--nvml]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

MARKER = "GPUVERIFY_RUN_ID"
VISIBLE = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


def environ_of(pid: int) -> dict[str, str] | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    out = {}
    for item in raw.split(b"\0"):
        key, eq, value = item.partition(b"=")
        if eq:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out


def lock_inodes(lock_dir: Path) -> dict[int, int]:
    """inode -> GPU index of each gpu-<i>.lock in the folder."""
    out = {}
    for path in lock_dir.glob("gpu-*.lock"):
        m = re.fullmatch(r"gpu-(\d+)\.lock", path.name)
        if m:
            try:
                out[path.stat().st_ino] = int(m[1])
            except OSError:
                pass
    return out


def lock_holders(text: str, inodes: dict[int, int]) -> dict[int, list[int]]:
    """GPU -> pids holding its lock, from /proc/locks' text (``1: FLOCK ADVISORY WRITE 123 08:01:456 0 EOF``)."""
    held: dict[int, list[int]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 6 or parts[1] != "FLOCK" or parts[2] == "->":  # "->": a waiter, not a holder
            continue
        ino = int(parts[5].rsplit(":", 1)[-1]) if parts[5].count(":") == 2 else -1
        if ino in inodes:
            held.setdefault(inodes[ino], []).append(int(parts[4]))
    return held


def read_proc_locks() -> str:
    """/proc/locks in one read call: read in small pieces, lines shift between the pieces as locks come
    and go, and a holder can be missed (seen with Path.read_text on a busy host)."""
    fd = os.open("/proc/locks", os.O_RDONLY)
    try:
        return os.read(fd, 4 << 20).decode(errors="replace")
    finally:
        os.close(fd)


def fdinfo_holders(lock_dir: Path) -> dict[int, list[int]]:
    """GPU -> pids holding its lock, from the ``lock:`` lines of /proc/PID/fdinfo of every descriptor open
    on a lock file: each a small read of its own, where /proc/locks is read a page at a time and can skip
    lines as locks come and go between the pages (seen with many waiters listed)."""
    paths = {str(p): int(p.name[4:-5]) for p in lock_dir.glob("gpu-*.lock") if p.name[4:-5].isdigit()}
    held: dict[int, set[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry.name}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{entry.name}/fd/{fd}")
                if target not in paths:
                    continue
                info = Path(f"/proc/{entry.name}/fdinfo/{fd}").read_text()
            except OSError:
                continue
            for line in info.splitlines():
                parts = line.split()
                if parts[:1] == ["lock:"] and len(parts) > 5 and parts[2] == "FLOCK":
                    held.setdefault(paths[target], set()).add(int(parts[5]))
    return {g: sorted(p) for g, p in held.items()}


def visible_gpus(value: str, uuids: dict[str, int]) -> list[int]:
    out = []
    for token in (t.strip() for t in value.split(",")):
        if token.isdigit():
            out.append(int(token))
        elif token in uuids:
            out.append(uuids[token])
    return out


def env_uses(uuids: dict[str, int]) -> dict[int, list[str]]:
    uses: dict[int, set[str]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        env = environ_of(int(entry.name))
        if not env or MARKER not in env:
            continue
        var = next((v for v in VISIBLE if v in env), None)
        for gpu in visible_gpus(env[var], uuids) if var else []:
            uses.setdefault(gpu, set()).add(env[MARKER])
    return {g: sorted(m) for g, m in uses.items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("lock_dir")
    ap.add_argument("stop_file")
    ap.add_argument("--interval", type=float, default=0.05)
    ap.add_argument("--nvml", action="store_true", help="read NVML's process lists too (a real NVIDIA host)")
    args = ap.parse_args()
    nv, handles, uuids = None, [], {}
    if args.nvml:
        import pynvml as nv  # nvidia-ml-py, in the lent machine's image

        nv.nvmlInit()
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            handles.append(h)
            uuid = nv.nvmlDeviceGetUUID(h)
            uuids[uuid.decode() if isinstance(uuid, bytes) else uuid] = i
    lock_dir, stop = Path(args.lock_dir), Path(args.stop_file)
    with open(args.out, "w", encoding="utf-8") as out:
        out.write(json.dumps({"uuids": uuids, "interval": args.interval, "nvml": bool(args.nvml)}) + "\n")
        n = 0
        while not stop.exists():
            t = time.time()
            inodes = lock_inodes(lock_dir)
            before = lock_holders(read_proc_locks(), inodes)
            sample: dict = {"t": t, "env": env_uses(uuids)}
            if nv is not None:
                nvml: dict[int, list[str]] = {}
                for i, h in enumerate(handles):
                    try:
                        procs = nv.nvmlDeviceGetComputeRunningProcesses(h)
                    except Exception as exc:  # NVMLError: recorded, the sampling goes on
                        sample.setdefault("errors", []).append(f"gpu {i}: {exc}")
                        continue
                    names = []
                    for p in procs:
                        env = environ_of(p.pid)
                        names.append(env.get(MARKER, f"pid:{p.pid}") if env is not None else f"pid:{p.pid}")
                    if names:
                        nvml[i] = sorted(set(names))
                sample["nvml"] = nvml
            after = lock_holders(read_proc_locks(), inodes)
            fdinfo = fdinfo_holders(lock_dir)  # the same facts read per descriptor: what /proc/locks skipped
            sample["locks"] = {
                g: sorted(set(before.get(g, [])) | set(after.get(g, [])) | set(fdinfo.get(g, [])))
                for g in set(before) | set(after) | set(fdinfo)
            }
            out.write(json.dumps(sample) + "\n")
            n += 1
            if n % 20 == 0:
                out.flush()
            time.sleep(max(0.0, args.interval - (time.time() - t)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
