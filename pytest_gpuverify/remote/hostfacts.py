"""What a GPU host says of itself at the preflight (remote/preflight.py runs this there, in the Hosts
row's Python): where its own env file keeps the Repos rows' checkouts and the tickets folder. Each
host keeps its checkouts where it likes, so a worker's rootdir, its node ids and ``--gpu-sync``'s
target folder come from these answers, never from the controller's env file."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict

MARK = "gpuverify-host-facts:"


class HostFacts(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)
    repos: dict[str, str] = {}  # Repos row name -> the checkout's path on the host
    tickets: str | None = None
    problem: str | None = None  # the host's env file did not load: its paths are unknown
    env_file: str | None = None  # the env file the host's workers read (`~` as written)
    env_from: str | None = None  # where that path came from: $GPUVERIFY_ENV, or the default

    def checkouts_root(self) -> str | None:
        """The deepest folder holding every checkout of the host (a worker's rootdir)."""
        return os.path.commonpath(list(self.repos.values())) if self.repos else None

    def repo_path(self, repo: str) -> str | None:
        return next((path for name, path in self.repos.items() if name.casefold() == repo.casefold()), None)


def host_facts(environ=os.environ) -> HostFacts:
    from pytest_gpuverify.config.envfile import ENV_PATH_VARIABLE, EnvFileError, default_env_path, load_env_file

    path = default_env_path(None, environ)
    where = f"${ENV_PATH_VARIABLE}" if environ.get(ENV_PATH_VARIABLE, "").strip() else "the default path"
    try:
        env = load_env_file(path)
    except EnvFileError as exc:  # its own words, without the fix, which is the controller's to give
        said = (f"{exc.where}: " if exc.where else "") + exc.message.rstrip(".")
        return HostFacts(problem=said[:200], env_file=str(path), env_from=where)
    except (OSError, ValueError) as exc:
        return HostFacts(problem=str(exc).splitlines()[0][:200], env_file=str(path), env_from=where)
    tickets = env.resources.tickets
    return HostFacts(
        repos={r.repo: str(r.path) for r in env.repos if r.path is not None},
        tickets=str(tickets.expanduser()) if tickets is not None else None,
    )


def main() -> None:
    print(MARK, host_facts().model_dump_json())


if __name__ == "__main__":
    main()
