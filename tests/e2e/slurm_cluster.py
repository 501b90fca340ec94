"""A real one-node Slurm cluster for the tests: Debian's munged, slurmctld and slurmd, started in a
scratch folder with ports of their own, and stopped by pid. The node has 4 GPUs of gres ``gpu``
whose files are character devices made with mknod (slurmd refuses regular files, and then sets no GPU
variables), and 8 CPUs by its configuration (``config_overrides``), so 8 one-GPU jobs can run 4 at a
time on a 2-core machine. Needs root (SlurmUser=root, munged as the munge user, mknod)."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ports import free_port

DAEMONS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "scontrol", "srun")
NODE = "gvnode"
PARTITION = "gpu"
GPUS = 4


def missing() -> Optional[str]:
    """Why a cluster cannot start here (one line), or None."""
    absent = [p for p in DAEMONS if not os.access(p, os.X_OK)] + [c for c in CLIENTS if shutil.which(c) is None]
    if absent:
        return f"Slurm or munge is not installed ({', '.join(absent)} missing): apt-get install slurm-wlm munge"
    if os.geteuid() != 0:
        return "a Slurm cluster of the tests needs root (SlurmUser=root, munged as munge, mknod)"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return "no munge user (apt-get install munge makes it)"
    return None


@dataclass
class SlurmCluster:
    root: Path
    pids: dict[str, int] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a client command (sbatch, squeue...): this cluster's slurm.conf."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(self.conf)
        env.update(extra)
        return env

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(list(argv), env=self.env(), capture_output=True, text=True, timeout=timeout)

    def start(self) -> None:
        root = self.root
        for sub in ("munge", "state", "spool", "dev"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        munge = pwd.getpwnam("munge")
        os.chmod(root, 0o755)
        os.chown(root / "munge", munge.pw_uid, munge.pw_gid)
        os.chmod(root / "munge", 0o700)
        key = root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chown(key, munge.pw_uid, munge.pw_gid)
        os.chmod(key, 0o400)
        for i in range(GPUS):  # character devices: slurmd refuses regular files as gres files
            dev = root / "dev" / f"gpu{i}"
            if not dev.exists():
                os.mknod(dev, 0o666 | 0o020000, os.makedev(195, i))
        (root / "gres.conf").write_text(f"NodeName={NODE} Name=gpu File={root}/dev/gpu[0-{GPUS - 1}]\n")
        ctld, slurmd = free_port(), free_port()
        self.conf.write_text("\n".join([
            "ClusterName=gvtest", f"SlurmctldHost={socket.gethostname()}(127.0.0.1)", "SlurmUser=root",
            f"SlurmctldPort={ctld}", f"SlurmdPort={slurmd}", "AuthType=auth/munge", "CredType=cred/munge",
            f"AuthInfo=socket={root}/munge/munge.socket", f"StateSaveLocation={root}/state",
            f"SlurmdSpoolDir={root}/spool", f"SlurmctldPidFile={root}/slurmctld.pid",
            f"SlurmdPidFile={root}/slurmd.pid", f"SlurmctldLogFile={root}/slurmctld.log",
            f"SlurmdLogFile={root}/slurmd.log", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core", "GresTypes=gpu", "MpiDefault=none",
            "ReturnToService=2", "SlurmdParameters=config_overrides", "SchedulerType=sched/backfill",
            "SchedulerParameters=sched_interval=1,bf_interval=1", "MessageTimeout=10", "KillWait=15",
            "InactiveLimit=0", "MinJobAge=300", "JobAcctGatherType=jobacct_gather/none",
            f"NodeName={NODE} NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1 CPUs=8 RealMemory=4000 "
            f"Gres=gpu:{GPUS} State=UNKNOWN",
            f"PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO", ""]))
        self._daemon("munged", ["/usr/sbin/munged", "-F", f"--key-file={key}", f"--socket={root}/munge/munge.socket",
                                f"--pid-file={root}/munge/munged.pid", f"--log-file={root}/munge/munged.log",
                                f"--seed-file={root}/munge/munged.seed", "--force"],
                     user=munge.pw_uid, group=munge.pw_gid)
        self._wait_for(lambda: (root / "munge" / "munge.socket").exists(), "munged's socket")
        self._daemon("slurmctld", ["/usr/sbin/slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._daemon("slurmd", ["/usr/sbin/slurmd", "-D", "-N", NODE, "-f", str(self.conf)])
        self._wait_for(self._node_ready, "the node to be idle in sinfo")

    def _daemon(self, name: str, argv: list[str], user: Optional[int] = None, group: Optional[int] = None) -> None:
        log = open(self.root / f"{name}.out", "ab")
        proc = subprocess.Popen(argv, env=self.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                user=user, group=group, extra_groups=[] if user is not None else None)
        log.close()
        self.pids[name] = proc.pid
        self._procs = getattr(self, "_procs", {})
        self._procs[name] = proc

    def _node_ready(self) -> bool:
        res = self.run("sinfo", "-h", "-N", "-o", "%T")
        return res.returncode == 0 and res.stdout.strip() in ("idle", "mixed", "allocated")

    def _wait_for(self, ready, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [n for n, p in getattr(self, "_procs", {}).items() if p.poll() is not None]
            if dead:
                raise RuntimeError(f"{', '.join(dead)} exited while waiting for {what}: {self.logs()}")
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"timed out waiting for {what}: {self.logs()}")

    def logs(self) -> str:
        tails = []
        for name in ("munged.out", "slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out"):
            path = self.root / name
            if path.exists():
                tails.append(f"{name}: " + " | ".join(path.read_text(errors="replace").splitlines()[-5:]))
        return "; ".join(tails)

    def stop(self) -> None:
        """Each daemon this cluster started, by its pid: SIGTERM, then SIGKILL."""
        for name in ("slurmd", "slurmctld", "munged"):
            proc = getattr(self, "_procs", {}).get(name)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# -- targets of the Slurm tests and bench/slurm_fanout.py ---------------------------------------------

SLOW = """import time

import aiter
from aiter import logger

aiter.report_environment()
time.sleep({seconds})
logger.info("[perf] dim: (4, 32, 8192)      dtype: torch.float16, torch avg: 16.19    us, B avg: 6.30     us, "
            "uplift: 157.0%[checkAllclose atol=0.01 rtol=0.01 \\033[32mpassed~\\033[0m]")
"""
SLOW_TARGETS = [f"op_tests/test_slow_{i}.py" for i in range(8)]
SLEEPERS = [f"op_tests/test_sleep_{i}.py" for i in range(5)]


def add_targets(repo: Path, seconds: float) -> None:
    """Eight passing targets that take ``seconds`` each, and five that sleep until stopped (committed)."""
    for path in SLOW_TARGETS:
        (repo / path).write_text(SLOW.format(seconds=seconds))
    for path in SLEEPERS:
        (repo / path).write_text((repo / "op_tests" / "test_sleep.py").read_text())
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "targets"],
                   check=True)
