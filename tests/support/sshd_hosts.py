"""Real GPU "hosts" reached over SSH, for the tests of remote/: Debian's sshd on loopback ports.

Each host is an ``sshd -D`` in its own UTS namespace (``unshare --uts`` + ``hostname``), with a
generated host key, the test's generated user key, and a ForceCommand that gives every session the
host's own world: its simulated ROCm tools and state on PATH (``ROCM_PATH`` too), its own env file
(``GPUVERIFY_ENV``: its container, its lock folder, its tickets folder) and ``TMPDIR`` (its own
shared readings), and ``PYTHONPATH`` at this checkout, so a worker imports the code under test.
The Docker engine is this machine's, shared by the hosts; each host has its own container.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ports import free_port
from session_cmd import PYTEST

from pytest_gpuverify.cli import demo

CHECKOUT = Path(__file__).resolve().parents[2]
SSHD = "/usr/sbin/sshd"


@functools.lru_cache(maxsize=1)
def sshd_unavailable() -> str | None:
    """Why real sshd hosts cannot be started here (None: they can)."""
    if os.geteuid() != 0:
        return "sshd hosts need root (unshare --uts, sshd privilege separation)"
    for tool in (SSHD, shutil.which("ssh"), shutil.which("ssh-keygen"), shutil.which("unshare")):
        if not tool or not os.path.exists(tool):
            return f"missing {tool or 'ssh/ssh-keygen/unshare'}: apt-get install -y openssh-server openssh-client"
    done = subprocess.run(["unshare", "--uts", "true"], capture_output=True, text=True)
    if done.returncode != 0:
        return f"`unshare --uts` is not allowed here: {done.stderr.strip()[:200]}"
    return None


@dataclass
class SshHost:
    name: str  # the Hosts row's host
    alias: str
    root: Path
    gpus: int
    uts_name: str  # what `hostname` prints there (the row's name, unless a test wants a liar)
    container: str = ""
    port: int = 0
    proc: subprocess.Popen | None = None
    pythonpath: str = str(CHECKOUT)
    repo: Path | None = None  # the host's checkout of the aiter row (None: the shared one, SshHosts.repo)
    umask: str | None = None  # the ssh sessions' umask there (None: sshd's)
    tickets_in_checkout: bool = False  # its tickets folder lies inside its own checkout (not gitignored)
    sampler_idle_s: float = 15.0  # its background sampler leaves this long after its last reader (tests: soon)
    own_env: bool = True  # False: its sessions get no GPUVERIFY_ENV and a HOME without the default env file
    own_home: bool = False  # its sessions' HOME and first folder are <root>/home (a user of its own), else root's

    @property
    def sim_bin(self) -> Path:
        return self.root / "sim-bin"

    @property
    def locks(self) -> Path:
        return self.root / "locks"

    @property
    def tickets(self) -> Path:
        return self.repo / "gv-tickets" if self.tickets_in_checkout and self.repo else self.root / "tickets"

    @property
    def env_path(self) -> Path:
        return self.root / "env.md"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def kill_sshd(self) -> None:
        """The host's sshd dies: its listener and every session it serves (SIGKILL), so each ssh
        connection to the host drops at once; what the sessions started (the workers) stays."""
        import signal

        assert self.proc is not None
        doomed = [self.proc.pid]
        for proc in Path("/proc").glob("[0-9]*"):
            pid = int(proc.name)
            try:
                if os.readlink(proc / "exe") != SSHD:
                    continue
                chain = pid
                while chain > 1 and chain != self.proc.pid:
                    chain = _parent(chain)
            except (OSError, IndexError, ValueError):
                continue
            if chain == self.proc.pid and pid != self.proc.pid:
                doomed.append(pid)
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(10)

    def lock_files_free(self) -> bool:
        return all(subprocess.run(["flock", "-n", str(p), "true"]).returncode == 0 for p in self.locks.glob("*.lock"))


@dataclass
class SshHosts:
    root: Path
    hosts: list[SshHost]
    repo: Path
    ssh_config: Path
    key: Path
    controller_env: Path
    client: object
    started: float = field(default_factory=time.time)

    def __getitem__(self, name: str) -> SshHost:
        return next(h for h in self.hosts if h.name == name)

    def ssh(self, host: SshHost, command: str, timeout: float = 20) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["ssh", "-F", str(self.ssh_config), host.alias, command],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def controller_environ(self, **extra) -> dict:
        env = dict(
            os.environ,
            GPUVERIFY_ENV=str(self.controller_env),
            GPUVERIFY_SSH_CONFIG=str(self.ssh_config),
            PYTHONPATH=str(CHECKOUT),
        )
        env.update(extra)
        return env

    def pytest(self, *args: str, cwd: Path, timeout: float = 300, env: dict | None = None, popen: bool = False):
        """pytest --gpu-verify on the controller (this machine, with no simulated GPU on PATH)."""
        cmd = [*PYTEST, "--gpu-verify", "--gpu-window", "0.3", *args]
        environ = self.controller_environ(**(env or {}))
        if popen:
            return subprocess.Popen(cmd, cwd=cwd, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return subprocess.run(cmd, cwd=cwd, env=environ, capture_output=True, timeout=timeout, text=True)


def _parent(pid: int) -> int:
    return int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])


def _is_bootstrap(pid: int) -> bool:
    """A Python running execnet's bootstrap line (not the `sh -c` that started it)."""
    try:
        argv = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return Path(argv[0].decode(errors="replace")).name.startswith("python") and any(
        b"exec(eval(sys.stdin.readline()))" in a for a in argv
    )


def worker_pids(host: SshHost) -> list[int]:
    """The xdist worker processes sshd started on ``host`` (its python -c bootstrap of execnet; not
    the processes they forked, the session's guard and sampler, which carry the same command line)."""
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        pid = int(proc.name)
        try:
            if not _is_bootstrap(pid) or _is_bootstrap(_parent(pid)):
                continue
        except (OSError, IndexError, ValueError):
            continue
        chain = pid
        while chain > 1:  # under this host's sshd?
            try:
                chain = _parent(chain)
            except (OSError, IndexError, ValueError):
                break
            if chain == host.proc.pid:
                pids.append(pid)
                break
    return pids


def host_python(folder: Path, dist: str = "pytest-gpuverify") -> str:
    """A python for the hosts whose site holds ``dist`` and what it requires, nothing else: what a GPU
    host installs (README, "Several GPU hosts"). This machine's site also holds the test suite's own
    plugins (hypothesis's costs every pytest start 0.45 s of CPU), which a GPU host has no reason to
    have. A venv of links into this site: made in a moment, no network."""
    import re
    from importlib import metadata

    from packaging.requirements import Requirement

    site = folder / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    if not (folder / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    wanted, seen = [dist], set()
    while wanted:
        name = re.sub(r"[-_.]+", "-", wanted.pop()).lower()
        if name in seen:
            continue
        seen.add(name)
        try:
            found = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional or platform-only requirement not installed here
        for line in found.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):  # this platform's, no extra
                wanted.append(req.name)
        for file in found.files or []:
            top = Path(str(file)).parts[0]
            source = Path(str(found.locate_file(top)))
            link = site / top
            importable = (
                top.endswith((".dist-info", ".egg-info", ".py", ".pth", ".so")) or (source / "__init__.py").exists()
            )
            if importable and top != ".." and source.exists() and not link.exists():  # not an sdist's README
                link.symlink_to(source)
    return str(folder / "bin" / "python")


def render_env(
    hosts: list[SshHost], here: SshHost | None, tickets: Path, repos: Path, repo: Path, python: str = sys.executable
) -> str:
    repo = here.repo if here is not None and here.repo is not None else repo
    """The env file as each host (``here``) or the controller (None) has it: the same Hosts rows,
    each host's own container and lock folder."""
    lines = [
        "## Resources",
        "",
        "| resource | path |",
        "|---|---|",
        f"| repos | {repos} |",
        f"| tickets | {tickets} |",
        "",
        "## Hosts",
        "",
        "| host | ssh alias | arch | gpus | python |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {h.name} | {h.alias} | gfx942 | {h.gpus} | {python} |" for h in hosts]
    container = here.container if here else hosts[0].container
    lines += [
        "",
        "## Repos",
        "",
        "| repo | path | container | mount |",
        "|---|---|---|---|",
        f"| aiter | {repo} | {container} | /workspace/aiter |",
        "",
        "## Containers",
        "",
        "| name | image | host |",
        "|---|---|---|",
    ]
    lines += [f"| {h.container} | {demo.ROOTFS_IMAGE} | {h.name} |" for h in hosts if here is None or h is here]
    lines += ["", "## GPU lock", "", "| host | picker | lock |", "|---|---|---|"]
    lines += [f"| {h.name} | builtin | `flock -E 75 -w 600 {h.locks}/gpu-<id>.lock` |" for h in hosts]
    return "\n".join(lines) + "\n"


def _sshd_config(host: SshHost, authorized: Path) -> str:
    return "\n".join(
        [
            f"Port {host.port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {host.root}/ssh_host_ed25519_key",
            f"PidFile {host.root}/sshd.pid",
            f"AuthorizedKeysFile {authorized}",
            "StrictModes no",
            "UsePAM no",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password",
            f"ForceCommand {host.root}/host-env.sh",
            "PrintMotd no",
            "LogLevel ERROR",
            "MaxStartups 100:30:200",
            "MaxSessions 100",
            "",
        ]
    )


def _host_env_script(host: SshHost) -> str:
    env = f'export GPUVERIFY_ENV="{host.env_path}"' if host.own_env else "unset GPUVERIFY_ENV"
    home = f'HOME="{host.root}/home" ' if host.own_home or not host.own_env else ""
    return f"""#!/bin/sh
export PATH="{host.sim_bin}:{demo.BASE_PATH}" ROCM_PATH="{host.sim_bin}" PYTHONPATH="{host.pythonpath}"
{env}
export {home}TMPDIR="{host.root}/tmp" GPUVERIFY_SAMPLER_IDLE_S={host.sampler_idle_s:g} LANG=C.UTF-8
{'cd "$HOME"' if home else ""}
{f"umask {host.umask}" if host.umask else ""}
[ -n "$SSH_ORIGINAL_COMMAND" ] || exec /bin/sh
exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"
"""


def start_sshd(host: SshHost, authorized: Path, known_hosts: Path) -> None:
    host.port = free_port()
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation folder (no systemd here)
    (host.root / "sshd_config").write_text(_sshd_config(host, authorized))
    script = host.root / "host-env.sh"
    script.write_text(_host_env_script(host))
    script.chmod(0o755)
    host.proc = subprocess.Popen(
        [
            "unshare",
            "--uts",
            "sh",
            "-c",
            f'hostname "$1" && exec {SSHD} -D -e -f "$2"',
            "sh",
            host.uts_name,
            str(host.root / "sshd_config"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(host.root / "sshd.log", "ab"),
    )
    pub = (host.root / "ssh_host_ed25519_key.pub").read_text().split()
    with open(known_hosts, "a") as f:
        f.write(f"[127.0.0.1]:{host.port} {pub[0]} {pub[1]}\n")
    deadline = time.time() + 15
    while time.time() < deadline:
        if host.proc.poll() is not None:
            raise RuntimeError(f"sshd of {host.name} exited: {(host.root / 'sshd.log').read_text()[-500:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", host.port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"sshd of {host.name} never listened on {host.port}")


@contextmanager
def ssh_hosts(
    root: Path,
    client,
    specs: list[tuple[str, int]],
    liars: dict | None = None,
    pythonpaths: dict | None = None,
    python: str = sys.executable,
    sampler_idle_s: float = 15.0,
    own_checkouts: dict[str, str] | None = None,
    umasks: dict[str, str] | None = None,
    tickets_in_checkout: frozenset[str] = frozenset(),
    without_env: frozenset[str] = frozenset(),
    own_homes: frozenset[str] = frozenset(),
):
    """Start one sshd host per (name, gpus) in ``specs``; ``liars``: name -> what its `hostname` prints;
    ``python``: the Hosts rows' python (:func:`host_python`: a GPU host's site); ``own_checkouts``:
    name -> a folder under the host's root where it keeps its own clone of the repo (its env file's
    Repos path; the controller's env file keeps the shared one); ``umasks``: name -> its sessions' umask;
    ``tickets_in_checkout``: names of hosts (with an own checkout) whose tickets folder lies in it;
    ``without_env``: names of hosts whose sessions find no env file of their own; ``own_homes``: names
    of hosts whose sessions' HOME is ``<root>/home`` (a host without an env file has one too)."""
    from pytest_gpuverify.simulator import SimState, install

    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    tag = uuid.uuid4().hex[:6]
    key = root / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    authorized, known = root / "authorized_keys", root / "known_hosts"
    shutil.copy(f"{key}.pub", authorized)
    repos = root / "repos"
    repo = demo.make_repo(repos / "aiter")
    hosts: list[SshHost] = []
    ssh_config = root / "ssh_config"
    try:
        for name, gpus in specs:
            host = SshHost(
                name=name,
                alias=f"gv13-{name}",
                root=root / name,
                gpus=gpus,
                uts_name=(liars or {}).get(name, name),
                container=f"gv-13-{name}-{tag}",
            )
            host.pythonpath = (pythonpaths or {}).get(name, host.pythonpath)
            host.sampler_idle_s = sampler_idle_s
            host.umask = (umasks or {}).get(name)
            if name in (own_checkouts or {}):
                host.repo = host.root / (own_checkouts or {})[name]
                host.repo.parent.mkdir(parents=True)
                subprocess.run(["git", "clone", "-q", str(repo), str(host.repo)], check=True)
            host.tickets_in_checkout = name in tickets_in_checkout
            host.own_env, host.own_home = name not in without_env, name in own_homes
            for sub in ("locks", "tmp", "home"):
                (host.root / sub).mkdir(parents=True)
            host.tickets.mkdir(parents=True)
            install(host.sim_bin, SimState.idle(gpus=gpus, arch="gfx942"))
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host.root / "ssh_host_ed25519_key")],
                check=True,
            )
            demo.start_container(client, host.container, host.sim_bin, {str(host.repo or repo): "/workspace/aiter"})
            hosts.append(host)
        for host in hosts:
            host.env_path.write_text(render_env(hosts, host, host.tickets, repos, repo, python))
            start_sshd(host, authorized, known)
        ssh_config.write_text(
            "".join(
                f"Host {h.alias}\n  HostName 127.0.0.1\n  Port {h.port}\n  User root\n  IdentityFile {key}\n"
                f"  IdentitiesOnly yes\n  UserKnownHostsFile {known}\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n"
                for h in hosts
            )
        )
        controller_env = root / "controller-env.md"
        (root / "controller-tickets").mkdir()
        controller_env.write_text(render_env(hosts, None, root / "controller-tickets", repos, repo, python))
        yield SshHosts(root, hosts, repo, ssh_config, key, controller_env, client)
    finally:
        for host in hosts:
            host.stop()
        demo.remove_sandbox_containers(client, [h.container for h in hosts])
