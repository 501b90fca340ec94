"""A private PostgreSQL cluster for the tests: Debian's server binaries (``apt-get install postgresql``),
``initdb`` in a temporary folder, the server on a free loopback port (and a unix socket in that folder),
a password login for one user, stopped at the end. PostgreSQL refuses to run as root: as root, the
cluster is made and run as ``nobody``."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ports import free_port

USER, PASSWORD = "gpuverify", "s3cret-pw"


def server_bin() -> Path | None:
    """The newest installed server's binaries (Debian keeps them under /usr/lib/postgresql/N/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(Path(p).parts[4]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


@dataclass(frozen=True)
class Cluster:
    port: int
    folder: Path

    def url(self, database: str = "postgres", password: str = PASSWORD) -> str:
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database; its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _as(user: str | None, argv: list[str]) -> list[str]:
    return ["runuser", "-u", user, "--", *argv] if user else argv


@contextmanager
def running_cluster() -> Iterator[Cluster]:
    """Start a cluster; stop it and remove its folder at the end. RuntimeError when it cannot start."""
    binaries = server_bin()
    if binaries is None:
        raise RuntimeError("no PostgreSQL server installed (apt-get install -y postgresql)")
    user = "nobody" if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="gpuverify-pg-"))
    data, pwfile = folder / "data", folder / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if user:
        entry = pwd.getpwnam(user)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
        os.chown(pwfile, entry.pw_uid, entry.pw_gid)
    port = free_port()
    try:
        subprocess.run(
            _as(
                user,
                [
                    str(binaries / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    USER,
                    f"--pwfile={pwfile}",
                    "--auth-local=trust",
                    "--auth-host=scram-sha-256",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ],
            ),
            check=True,
            capture_output=True,
            cwd=folder,
        )
        settings = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        start = [str(binaries / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w", "-o", settings, "start"]
        proc = subprocess.run(_as(user, start), capture_output=True, text=True, cwd=folder)
        if proc.returncode != 0:
            log = (folder / "log").read_text() if (folder / "log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {proc.stdout}{proc.stderr}{log[-2000:]}")
        try:
            yield Cluster(port, folder)
        finally:
            subprocess.run(
                _as(user, [str(binaries / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
                capture_output=True,
                cwd=folder,
            )
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"initdb failed: {exc.stderr.decode(errors='replace')[-2000:]}") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
