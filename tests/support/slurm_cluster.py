"""A real two-node Slurm cluster for the tests: Debian's munged, slurmctld and two slurmd, started in a
scratch folder with ports of their own, and stopped by pid. Each slurmd runs in a UTS namespace of its
own (``unshare --uts``) under its node's hostname, as on a cluster whose nodes are not the login
machine; they share the loopback address and differ by port. Each node has 2 GPUs of gres ``gpu``
whose files are character devices made with mknod (slurmd refuses regular files, and then sets no GPU
variables), and 8 CPUs by its configuration (``config_overrides``). Both nodes are this machine, so
their jobs see the same simulated GPUs (Slurm numbers each node's from 0): the plugin's lock keeps
two jobs off one GPU. Needs root (SlurmUser=root, munged as the munge user, mknod, unshare)."""

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

from ports import free_port

DAEMONS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "scontrol", "srun", "unshare")
NODES = ("gvnode1", "gvnode2")  # each slurmd's node name and hostname
NODE = NODES[0]
PARTITION = "gpu"
GPUS_PER_NODE = 2
GPUS = GPUS_PER_NODE * len(NODES)  # Slurm's count over the cluster
SLURMD_TIMEOUT_S = 10  # a node whose slurmd stops answering is DOWN after this, and its jobs NODE_FAIL


def missing() -> str | None:
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
        for sub in ("munge", "state", "dev", *(f"spool-{n}" for n in NODES)):
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
        (root / "gres.conf").write_text(
            "".join(
                f"NodeName={n} Name=gpu File={root}/dev/gpu[{i * GPUS_PER_NODE}-{(i + 1) * GPUS_PER_NODE - 1}]\n"
                for i, n in enumerate(NODES)
            )
        )
        ctld = free_port()
        self.ports = {n: free_port() for n in NODES}
        self.conf.write_text(
            "\n".join(
                [
                    "ClusterName=gvtest",
                    f"SlurmctldHost={socket.gethostname()}(127.0.0.1)",
                    "SlurmUser=root",
                    f"SlurmctldPort={ctld}",
                    f"SlurmdPort={self.ports[NODE]}",
                    "AuthType=auth/munge",
                    "CredType=cred/munge",
                    f"AuthInfo=socket={root}/munge/munge.socket,cred_expire=10",
                    f"StateSaveLocation={root}/state",
                    f"SlurmdSpoolDir={root}/spool-%n",
                    f"SlurmctldPidFile={root}/slurmctld.pid",
                    f"SlurmdPidFile={root}/slurmd-%n.pid",
                    f"SlurmctldLogFile={root}/slurmctld.log",
                    f"SlurmdLogFile={root}/slurmd-%n.log",
                    f"SlurmdTimeout={SLURMD_TIMEOUT_S}",
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/none",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_Core",
                    "GresTypes=gpu",
                    "MpiDefault=none",
                    "ReturnToService=2",
                    "SlurmdParameters=config_overrides",
                    "SchedulerType=sched/backfill",
                    "SchedulerParameters=sched_interval=1,bf_interval=1",
                    "MessageTimeout=10",
                    "KillWait=15",
                    "InactiveLimit=0",
                    "MinJobAge=300",
                    "JobAcctGatherType=jobacct_gather/none",
                    *(
                        f"NodeName={n} NodeHostname={n} NodeAddr=127.0.0.1 Port={self.ports[n]} CPUs=8 RealMemory=4000 "
                        f"Gres=gpu:{GPUS_PER_NODE} State=UNKNOWN"
                        for n in NODES
                    ),
                    f"PartitionName={PARTITION} Nodes={','.join(NODES)} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO",
                    "",
                ]
            )
        )
        self._daemon(
            "munged",
            [
                "/usr/sbin/munged",
                "-F",
                f"--key-file={key}",
                f"--socket={root}/munge/munge.socket",
                f"--pid-file={root}/munge/munged.pid",
                f"--log-file={root}/munge/munged.log",
                f"--seed-file={root}/munge/munged.seed",
                "--force",
            ],
            user=munge.pw_uid,
            group=munge.pw_gid,
        )
        self._wait_for(lambda: (root / "munge" / "munge.socket").exists(), "munged's socket")
        self._daemon("slurmctld", ["/usr/sbin/slurmctld", "-D", "-i", "-f", str(self.conf)])
        for node in NODES:
            self.start_node(node)
        self._wait_for(self._nodes_ready, "the nodes to be idle in sinfo")

    def start_node(self, node: str) -> None:
        """The node's slurmd, under its own hostname (a UTS namespace of its own)."""
        self._daemon(
            f"slurmd-{node}",
            [
                "unshare",
                "--uts",
                "sh",
                "-c",
                f'hostname {node} && exec /usr/sbin/slurmd -D -N {node} -f "$0"',
                str(self.conf),
            ],
        )

    def kill_node(self, node: str) -> list[int]:
        """A node crash: SIGKILL to its slurmd and to every process of its jobs (each slurmstepd of the
        node and what it started). Returns the pids killed."""
        jobs = self.run("squeue", "-h", "-w", node, "-o", "%i").stdout.split()
        proc = self._procs.pop(f"slurmd-{node}")
        killed = [proc.pid]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for pid in _job_processes(jobs):
            for member in _descendants(pid) + [pid]:
                try:
                    os.kill(member, signal.SIGKILL)
                    killed.append(member)
                except ProcessLookupError:
                    pass
        return killed

    def _daemon(self, name: str, argv: list[str], user: int | None = None, group: int | None = None) -> None:
        log = open(self.root / f"{name}.out", "ab")
        proc = subprocess.Popen(
            argv,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            user=user,
            group=group,
            extra_groups=[] if user is not None else None,
        )
        log.close()
        self.pids[name] = proc.pid
        self._procs = getattr(self, "_procs", {})
        self._procs[name] = proc

    def node_states(self) -> dict[str, str]:
        res = self.run("sinfo", "-h", "-N", "-o", "%N|%T")
        return dict(line.split("|", 1) for line in res.stdout.split() if "|" in line) if res.returncode == 0 else {}

    def _nodes_ready(self) -> bool:
        states = self.node_states()
        return sorted(states) == sorted(NODES) and all(s in ("idle", "mixed", "allocated") for s in states.values())

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
        for name in (
            "munged.out",
            "slurmctld.log",
            "slurmctld.out",
            *(f"slurmd-{n}.log" for n in NODES),
            *(f"slurmd-{n}.out" for n in NODES),
        ):
            path = self.root / name
            if path.exists():
                tails.append(f"{name}: " + " | ".join(path.read_text(errors="replace").splitlines()[-5:]))
        return "; ".join(tails)

    def stop(self) -> None:
        """Each daemon this cluster started, by its pid: SIGTERM, then SIGKILL."""
        for name in (*(f"slurmd-{n}" for n in NODES), "slurmctld", "munged"):
            proc = getattr(self, "_procs", {}).get(name)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _job_processes(jobs: list[str]) -> list[int]:
    """The slurmstepd processes of ``jobs`` (``slurmstepd: [41.batch]``) and every process whose
    environment names one of them (the batch script and what it started)."""
    marks = [f"[{job}.".encode() for job in jobs]
    ids = {f"SLURM_JOB_ID={job}".encode() for job in jobs}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = set((entry / "environ").read_bytes().split(b"\0"))
        except OSError:
            continue
        if (cmdline.startswith(b"slurmstepd") and any(m in cmdline for m in marks)) or ids & environ:
            found.append(int(entry.name))
    return found


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) if entry.name.isdigit() else None
        except (OSError, IndexError, ValueError):
            continue
        if ppid is not None:
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


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
LONG_TARGET = "op_tests/test_long_0.py"  # long enough to be requeued mid-run
LONG_S = 20
SLEEPERS = [f"op_tests/test_sleep_{i}.py" for i in range(5)]


def add_targets(repo: Path, seconds: float) -> None:
    """Eight passing targets that take ``seconds`` each, and five that sleep until stopped (committed)."""
    for path in SLOW_TARGETS:
        (repo / path).write_text(SLOW.format(seconds=seconds))
    (repo / LONG_TARGET).write_text(SLOW.format(seconds=LONG_S))
    for path in SLEEPERS:
        (repo / path).write_text((repo / "op_tests" / "test_sleep.py").read_text())
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "targets"], check=True
    )
