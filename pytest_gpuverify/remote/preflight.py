"""Before any worker starts: each host answers ``ssh <alias> hostname`` with its Hosts row's name
(the env file's Hosts table), and its Python imports the same pytest-gpuverify version as the controller.

One ssh round trip per host, all hosts at once, each bounded by a timeout: a host that does not
answer is reported and left out; a wrong name or plugin stops the run before anything runs."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from pydantic import BaseModel, ConfigDict

from pytest_gpuverify import __version__
from pytest_gpuverify.config.envfile import HostRow
from pytest_gpuverify.config.hosts import same_host
from pytest_gpuverify.remote.hostfacts import MARK as FACTS_MARK
from pytest_gpuverify.remote.hostfacts import HostFacts
from pytest_gpuverify.remote.sshmux import SharedSsh, run_ssh

SSH_CONFIG_VARIABLE = "GPUVERIFY_SSH_CONFIG"  # an ssh_config for the aliases (default: ssh's own)
SSH_TIMEOUT_VARIABLE = "GPUVERIFY_SSH_TIMEOUT"
DEFAULT_SSH_TIMEOUT_S = 10.0
# a dead link is noticed after ALIVE_INTERVAL_S * ALIVE_COUNT seconds without an answer, not at TCP's hours
ALIVE_INTERVAL_S = 5
ALIVE_COUNT = 3
_MARK = "gpuverify-preflight:"
_PYTHON_MARK = "gpuverify-python:"


class HostCheck(BaseModel):
    """What one host answered: ``unreachable`` (a reason) leaves it out; ``problem`` stops the run."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    row: HostRow
    hostname: str | None = None
    facts: HostFacts | None = None  # what the host said of its Python and paths (remote/hostfacts.py)
    unreachable: str | None = None
    problem: str | None = None


def python_version() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def python_of(row: HostRow) -> str:
    return row.python or "python3"


def ssh_timeout_s(environ=os.environ) -> float:
    """$GPUVERIFY_SSH_TIMEOUT (seconds, at least 1); a bad value is a usage error naming it."""
    from pytest_gpuverify.config.options import check_seconds

    return check_seconds(SSH_TIMEOUT_VARIABLE, environ.get(SSH_TIMEOUT_VARIABLE, DEFAULT_SSH_TIMEOUT_S), minimum=1)


def ssh_base(alias: str, timeout_s: float, config: str | None, shared: SharedSsh | None = None) -> list[str]:
    """ssh that never prompts (BatchMode: a password or a key's passphrase is an error, not a wait),
    gives up connecting after ``timeout_s`` and ends a link that stops answering (server-alive pings);
    with ``shared``, over the host's one connection of the session (remote/sshmux.py)."""
    argv = [
        "ssh",
        "-o",
        "BatchMode=yes",
        "-o",
        f"ConnectTimeout={max(1, int(timeout_s))}",
        "-o",
        f"ServerAliveInterval={ALIVE_INTERVAL_S}",
        "-o",
        f"ServerAliveCountMax={ALIVE_COUNT}",
    ]
    if shared is not None:
        argv += shared.options()
    if config:
        argv += ["-F", config]
    return [*argv, alias]


def _probe_script(python: str) -> str:
    # xdist is looked up, not imported: its import is pytest's (0.15 s of CPU on a host starting its workers)
    probe = (
        "import sys, importlib.util as u\nprint('" + _PYTHON_MARK + "', '%d.%d' % sys.version_info[:2])\n"
        "try:\n import pytest_gpuverify\n"
        " if u.find_spec('xdist') is None: raise ImportError('No module named xdist')\n"
        " print('" + _MARK + "', pytest_gpuverify.__version__)\n"
        " from pytest_gpuverify.remote.hostfacts import main\n main()\n"
        "except Exception as e:\n print('" + _MARK + "', 'missing', repr(e)[:200])"
    )
    return f"hostname; {shlex.quote(python)} -c {shlex.quote(probe)}"


def check_host(
    row: HostRow, env_path, timeout_s: float, config: str | None, shared: SharedSsh | None = None
) -> HostCheck:
    alias, python = row.ssh_alias or row.host, python_of(row)
    try:  # this session becomes the host's master (sshmux.py): its output goes to files (run_ssh)
        done = run_ssh([*ssh_base(alias, timeout_s, config, shared), _probe_script(python)], timeout_s + 5)
    except subprocess.TimeoutExpired:
        return HostCheck(
            row=row, unreachable=f"host {row.host}: `ssh {alias} hostname` did not answer within {timeout_s:g} s"
        )
    except OSError as exc:  # no ssh client here
        return HostCheck(row=row, unreachable=f"host {row.host}: `ssh {alias} hostname` could not run ({exc})")
    lines = done.stdout.decode("utf-8", errors="replace").splitlines()
    if done.returncode == 255 or not lines:
        said = (done.stderr.decode("utf-8", errors="replace").strip().splitlines() or ["no output"])[-1]
        login = login_problem(said, alias)
        if login:
            return HostCheck(row=row, problem=f"host {row.host}: {login}")
        return HostCheck(row=row, unreachable=f"host {row.host}: `ssh {alias} hostname` failed ({said[:160]})")
    hostname = lines[0].strip()
    if not same_host(hostname, row.host):
        return HostCheck(
            row=row,
            hostname=hostname,
            problem=(
                f"`ssh {alias} hostname` printed {hostname!r}, but the Hosts row of {env_path} with that alias is "
                f"{row.host!r}: the alias reaches another machine. Fix: correct the host or ssh alias cell of that "
                "row (run `ssh <alias> hostname` first and match the result to the table)"
            ),
        )
    said_python = next(
        (ln.split(None, 1)[1].strip() for ln in lines if ln.startswith(_PYTHON_MARK) and " " in ln), None
    )
    if said_python is not None and said_python != python_version():  # xdist's workers hang on another version
        return HostCheck(
            row=row,
            hostname=hostname,
            problem=(
                f"host {row.host}: {python} there is Python {said_python}, the controller runs Python {python_version()}; "
                f"xdist's workers need the same version. Fix: put a Python {python_version()} with pytest-gpuverify in "
                f"the python cell of its Hosts row, or run the controller with Python {said_python}"
            ),
        )
    found = next((ln.split(None, 1)[1].strip() for ln in lines if ln.startswith(_MARK)), "missing")
    fix = f"ssh {alias} {python} -m pip install 'pytest-gpuverify=={__version__}' pytest-xdist"
    if found.startswith("missing"):
        return HostCheck(
            row=row,
            hostname=hostname,
            problem=(
                f"host {row.host}: pytest-gpuverify (with pytest-xdist) does not import in {python} there. Fix: {fix}"
            ),
        )
    if found != __version__:
        return HostCheck(
            row=row,
            hostname=hostname,
            problem=(
                f"host {row.host}: pytest-gpuverify {found} is installed for {python} there, the controller has "
                f"{__version__}. Fix: {fix}"
            ),
        )
    facts = _facts(lines)
    if facts is not None and facts.problem:  # every worker there would stop at its start, and be replaced
        return HostCheck(row=row, hostname=hostname, facts=facts, problem=env_file_problem(row, alias, facts))
    return HostCheck(row=row, hostname=hostname, facts=facts)


def env_file_problem(row: HostRow, alias: str, facts: HostFacts) -> str:
    """One line: the host's own env file (its workers read it; ``--gpu-env`` is the controller's) did not load."""
    where = f"{facts.env_file} ({facts.env_from} there)" if facts.env_file else "its env file"
    return (
        f"host {row.host}: its workers read the host's own env file, {where}: {facts.problem}. Fix: write "
        f"that file on {row.host} (`ssh {alias}`, then `/setup-mstack env`), or set GPUVERIFY_ENV to one in "
        f"the environment of its ssh sessions; --gpu-env names this machine's file only"
    )


def _facts(lines: list[str]) -> HostFacts | None:
    from pydantic import ValidationError

    said = next((ln.split(None, 1)[1] for ln in lines if ln.startswith(FACTS_MARK) and " " in ln), None)
    try:
        return HostFacts.model_validate_json(said) if said else None
    except ValidationError:
        return None


def login_problem(said: str, alias: str) -> str | None:
    """ssh's last line when it reached the host but could not log in without prompting (BatchMode):
    the cause and the fix in one line, else None (the host did not answer)."""
    low = said.casefold()
    if "permission denied" not in low and "host key verification failed" not in low:
        return None
    if "host key verification failed" in low:
        return (
            f"`ssh {alias}` refused the host's key (host key verification failed). Fix: check the host is the "
            f"one you mean, then `ssh {alias} true` once to record its key"
        )
    return (
        f"`ssh {alias}` could not log in without a prompt ({said.strip()[:120]}): the plugin's ssh never asks "
        f"for a password or a key's passphrase. Fix: load the key into your agent (`ssh-add`), or give the "
        f"alias a key ssh can use unattended, then check `ssh -o BatchMode=yes {alias} true`"
    )


def check_hosts(
    rows: list[HostRow], env_path, timeout_s: float, config: str | None, shared: SharedSsh | None = None
) -> list[HostCheck]:
    """Each host's answer; with ``shared``, each check's connection stays open as the host's master."""
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(rows)))) as pool:
        return list(pool.map(lambda r: check_host(r, env_path, timeout_s, config, shared), rows))
