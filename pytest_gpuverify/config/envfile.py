"""The mstack env file (its format: docs/env-file.md): hosts, repos, containers and the GPU lock convention.

The file is Markdown that `/setup-mstack env` writes and people edit by hand, so the reader is
lenient about spelling (case, backticks, optional outer pipes) and strict about facts: a wrong or
ambiguous value stops the run with one line naming the file, section, row and fix, because a
guessed host, container or lock path makes the result prove nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from pytest_gpuverify.config.containers import HOST_CONTAINER, row_problem, runs_on_host
from pytest_gpuverify.config.envfile_markdown import (  # noqa: F401 (SECTION_COLUMNS and NumberedLine re-exported)
    _LINE_BREAK,
    _SECTION_BY_KEY,
    SECTION_COLUMNS,
    NumberedLine,
    _cell_value,
    _find_tables,
    _split_cells,
    _split_sections,
)
from pytest_gpuverify.config.errors import UsageError
from pytest_gpuverify.config.lockspec import LOCK_EXAMPLE, LockPrefixError, LockSpec, parse_lock_prefix  # noqa: F401 (re-exported)
from pytest_gpuverify.config.signing import SigningRow, signing_row
from pytest_gpuverify.config.slurm_settings import SlurmSettings, slurm_settings

DEFAULT_ENV_PATH = "~/.cursor/mstack/env.md"
ENV_PATH_VARIABLE = "GPUVERIFY_ENV"
MAX_ENV_FILE_BYTES = 1 << 20  # a page of tables; anything bigger is the wrong file
SETUP_FIX = "run `/setup-mstack env`, or pass `--gpu-env PATH` (or set $GPUVERIFY_ENV)."

_ARCH = re.compile(r"gfx[0-9a-f]+|sm_\d+")

PathLike = str | os.PathLike


class EnvFileError(UsageError):
    """A fact in the env file is missing or wrong; its place is a section and a data row."""

    def __init__(
        self,
        path: PathLike,
        message: str,
        fix: str,
        *,
        section: str | None = None,
        row: int | None = None,
        row_label: str | None = None,
    ) -> None:
        self.path, self.section = Path(path), section
        self.row = row  # 1-based data row of the section's table
        self.row_label = row_label  # the row's first cell, so the reader finds it without counting
        where = [f"section {section!r}"] if section else []
        if row is not None:
            where.append(f"row {row}" + (f" ({row_label})" if row_label else ""))
        super().__init__(self.path, message, fix, where=", ".join(where) or None, named=False)


class EnvFileMissing(EnvFileError):
    """The env file does not exist or cannot be read (a caller may offer to write one)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Resources(_Frozen):
    tickets: Path | None = None
    repos: Path | None = None
    extra: dict[str, str] = {}  # other resource rows: lowercase name -> path as written


class HostRow(_Frozen):
    host: str
    ssh_alias: str | None = None
    arch: str | None = None  # lowercase, e.g. gfx942 or sm_90
    gpus: int | None = None
    python: str | None = None  # optional column: the host's Python for xdist workers (remote/)

    @property
    def is_local(self) -> bool:
        return self.ssh_alias is not None and self.ssh_alias.casefold() in ("local", "-")


class RepoRow(_Frozen):
    repo: str
    path: Path | None = None
    container: str | None = None
    mount: str | None = None  # a path inside the container, so a POSIX string, not a host Path


class ContainerRow(_Frozen):
    name: str  # or `run` / `run:<label>`: a fresh container of `image` per locked run (ephemeral.py)
    image: str | None = None
    host: str | None = None
    mounts: str | None = None  # optional column, `run` rows only: /host:/container[:ro], comma-separated
    env: str | None = None  # optional column, `run` rows only: NAME=VALUE words


class GpuLockRow(_Frozen):
    host: str
    picker: str | None = None  # a shell command printing one GPU index, or `builtin`
    lock: str | None = None  # the flock prefix as written (shown in messages)
    lock_spec: LockSpec | None = None  # ``lock`` as read once, when the file is read (lockspec.py)

    @property
    def picker_is_builtin(self) -> bool:
        return self.picker is not None and self.picker.casefold() == "builtin"


class EnvFile(_Frozen):
    path: Path
    resources: Resources = Field(default_factory=Resources)  # built when needed, not at import
    hosts: list[HostRow] = []
    repos: list[RepoRow] = []
    containers: list[ContainerRow] = []
    gpu_locks: list[GpuLockRow] = []
    signing: list[SigningRow] = []
    slurm: SlurmSettings = Field(default_factory=SlurmSettings)  # the Slurm launcher's settings (slurm_settings.py)
    rows_per_section: dict[str, int] = {}  # the sections present -> their data row count

    def require(self, section_name: str) -> None:
        """Raise EnvFileError unless the section is present and has at least one row."""
        section = _SECTION_BY_KEY.get(" ".join(section_name.split()).casefold())
        if section is None:
            raise ValueError(f"unknown env file section {section_name!r}")
        header = " | ".join(SECTION_COLUMNS[section])
        if section not in self.rows_per_section:
            raise EnvFileError(
                self.path,
                f"section {section!r} is missing",
                f"add a '## {section}' table with columns | {header} |, or run `/setup-mstack env`.",
            )
        if self.rows_per_section[section] == 0:
            raise EnvFileError(
                self.path, "the table has no rows", f"add a row under the header | {header} |.", section=section
            )

    def host(self, name: str) -> HostRow | None:
        # Host names are DNS names, and DNS ignores case.
        return next((h for h in self.hosts if h.host.casefold() == name.casefold()), None)

    def hosts_for_arch(self, arch: str) -> list[HostRow]:
        return [h for h in self.hosts if h.arch is not None and h.arch == arch.strip().lower()]

    def repo(self, name: str) -> RepoRow | None:
        return next((r for r in self.repos if r.repo.casefold() == name.casefold()), None)

    def repo_for_path(self, path: PathLike) -> RepoRow | None:
        """The repo whose host path holds ``path``; the deepest wins (a worktree inside counts).

        Whole components are compared, so /repos/aiter2 is not inside /repos/aiter; both sides are
        resolved, so a symlinked home or a `..` on either side still matches.
        """
        target = Path(path).expanduser().resolve()
        inside = [
            (len(root.parts), row)
            for row in self.repos
            if row.path is not None
            for root in [row.path.resolve()]
            if target == root or root in target.parents
        ]
        return max(inside, key=lambda depth_row: depth_row[0])[1] if inside else None

    def container(self, name: str) -> ContainerRow | None:
        # Docker names are case-sensitive, and a near miss is someone else's container.
        return next((c for c in self.containers if c.name == name), None)

    def gpu_lock(self, host: str) -> GpuLockRow | None:
        return next((g for g in self.gpu_locks if g.host.casefold() == host.casefold()), None)


def default_env_path(option_value: PathLike | None, environ: Mapping[str, str]) -> Path:
    """``--gpu-env``, else $GPUVERIFY_ENV, else the mstack default; `~` is kept as written."""
    if option_value:
        return Path(option_value)
    if environ.get(ENV_PATH_VARIABLE, "").strip():
        return Path(environ[ENV_PATH_VARIABLE].strip())
    return Path(DEFAULT_ENV_PATH)


def load_env_file(path: PathLike) -> EnvFile:
    """Read and check the env file; errors name ``path`` as the caller wrote it (`~` and all)."""
    file = Path(path).expanduser()
    try:
        size = file.stat().st_size
        if size > MAX_ENV_FILE_BYTES:
            raise EnvFileError(
                path,
                f"the file is {size} bytes, too big for an env file",
                "point --gpu-env at the env.md that `/setup-mstack env` writes.",
            )
        data = file.read_bytes()
    except FileNotFoundError:
        raise EnvFileMissing(path, "the env file does not exist", SETUP_FIX) from None
    except OSError as exc:
        raise EnvFileMissing(path, f"cannot read the env file ({exc.strerror or exc})", SETUP_FIX) from None
    return parse_env_text(_decode(data, path), path)


def parse_env_text(text: str, path: PathLike) -> EnvFile:
    """Parse the env file's text; ``path`` is named in errors and kept (expanded) in the result."""
    rows: dict[str, list[_Row]] = {}
    for section, body in _split_sections(_LINE_BREAK.split(text.lstrip("\ufeff"))):
        if section in rows:
            raise EnvFileError(path, "the section appears twice", "merge the two tables into one.", section=section)
        tables = _find_tables(body)
        if len(tables) != 1:
            problem, action = (f"has {len(tables)} tables", "merge them into") if tables else ("has no table", "add")
            raise EnvFileError(
                path,
                f"the section {problem}",
                f"{action} one table with the header | {' | '.join(SECTION_COLUMNS[section])} |.",
                section=section,
            )
        rows[section] = _table_rows(path, section, tables[0])
    return EnvFile(
        path=Path(path).expanduser(),
        resources=_resources(rows.get("Resources", [])),
        hosts=[_host(where, cells) for where, cells in rows.get("Hosts", [])],
        repos=[_repo(where, cells) for where, cells in rows.get("Repos", [])],
        containers=[_container(where, cells) for where, cells in rows.get("Containers", [])],
        gpu_locks=[_gpu_lock(where, cells) for where, cells in rows.get("GPU lock", [])],
        signing=[signing_row(where, cells) for where, cells in rows.get("Signing", [])],
        slurm=slurm_settings(rows.get("Slurm", [])),
        rows_per_section={section: len(section_rows) for section, section_rows in rows.items()},
    )


def _decode(data: bytes, path: PathLike) -> str:
    """UTF-8 text, or an error naming the line (and section and row) of the first bad byte."""
    fix = "save the env file as UTF-8 text, or rewrite it with `/setup-mstack env`."
    if b"\x00" in data:
        raise EnvFileError(path, "the file holds NUL bytes, so it is not a text env file", fix)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        lines = _LINE_BREAK.split(data[: exc.start].decode("utf-8-sig"))
        bad_line, section, row = len(lines), None, None
        for name, body in _split_sections(lines):
            if any(number == bad_line for number, _ in body):
                section = name
                for table in _find_tables(body):
                    numbers = [number for number, _ in table]
                    row = numbers.index(bad_line) - 1 if bad_line in numbers[2:] else row
        raise EnvFileError(
            path, f"byte 0x{data[exc.start]:02x} on line {bad_line} is not UTF-8", fix, section=section, row=row
        ) from None


class _Where(NamedTuple):
    """Where a row sits, so each row check can raise an error that points at it."""

    path: PathLike
    section: str
    row: int
    label: str | None

    def error(self, message: str, fix: str) -> EnvFileError:
        return EnvFileError(self.path, message, fix, section=self.section, row=self.row, row_label=self.label)


_Row = tuple[_Where, dict[str, str | None]]


def _table_rows(path: PathLike, section: str, table: list[NumberedLine]) -> list[_Row]:
    # Column names: any case, any spacing, `_` or `-` for a space, bold or backticks allowed.
    columns = [
        " ".join(re.sub(r"[_-]", " ", cell.strip("`* ").casefold()).split()) for cell in _split_cells(table[0][1])
    ]
    required = SECTION_COLUMNS[section]
    for name in required:
        if name not in columns:
            raise EnvFileError(
                path,
                f"the table has no {name!r} column",
                f"{section} needs columns: {' | '.join(required)}.",
                section=section,
            )
    rows: list[_Row] = []
    seen: set[str] = set()
    for number, (_, line) in enumerate(table[2:], start=1):
        values = [_cell_value(cell) for cell in _split_cells(line)]
        where = _Where(path, section, number, values[0][:40] if values and values[0] else None)
        if len(values) != len(columns):
            raise where.error(
                f"the row has {len(values)} cells but the header has {len(columns)}",
                "give every row one cell per column; write `not set` for an unknown "
                "value and `\\|` for a pipe inside a cell.",
            )
        if all(value is None for value in values):
            continue  # a blank template row states nothing
        cells = dict(zip(columns, values))
        key = cells[required[0]]
        if key is None:
            raise where.error(f"the {required[0]} cell is empty", f"name the {required[0]} in the first cell.")
        # Docker container names are case-sensitive; host, repo and resource names are not.
        folded = key if section == "Containers" else key.casefold()
        if folded in seen:
            raise where.error(
                f"{required[0]} {key!r} is listed twice", f"keep one row per {required[0]}; delete or rename the other."
            )
        seen.add(folded)
        rows.append((where, cells))
    return rows


def _host_path(where: _Where, value: str | None) -> Path | None:
    path = Path(value).expanduser() if value is not None else None
    if path is not None and not path.is_absolute():
        raise where.error(f"path {value!r} is not absolute", "write the full host path, e.g. /home/dev/repos/aiter.")
    return path


def _resources(rows: list[_Row]) -> Resources:
    found: dict[str, Path | None] = {}
    extra: dict[str, str] = {}
    for where, cells in rows:
        name = (cells["resource"] or "").lower()
        if name in ("tickets", "repos"):
            found[name] = _host_path(where, cells["path"])
        elif cells["path"] is not None:
            extra[name] = cells["path"]
    return Resources(tickets=found.get("tickets"), repos=found.get("repos"), extra=extra)


def _host(where: _Where, cells: dict[str, str | None]) -> HostRow:
    arch, gpus = cells["arch"], cells["gpus"]
    if arch is not None and not _ARCH.fullmatch(arch.lower()):
        raise where.error(f"arch {arch!r} is not a GPU arch", "write the bare arch, e.g. gfx942, gfx950 or sm_90.")
    if gpus is not None and not (gpus.isascii() and gpus.isdigit() and int(gpus) > 0):
        numeric = re.fullmatch(r"[+-]?[0-9]+(\.[0-9]*)?", gpus)  # -1, 0, 8.0: a number, but not a count
        raise where.error(
            f"gpus {gpus!r} " + ("must be a whole number of GPUs, 1 or more" if numeric else "is not a number"),
            "write the GPU count, e.g. 8.",
        )
    return HostRow(
        host=cells["host"],
        ssh_alias=cells["ssh alias"],
        arch=arch.lower() if arch else None,
        gpus=int(gpus) if gpus else None,
        python=cells.get("python"),
    )


def _repo(where: _Where, cells: dict[str, str | None]) -> RepoRow:
    mount = cells["mount"]
    if mount is not None and not PurePosixPath(mount).is_absolute():
        raise where.error(
            f"mount {mount!r} is not an absolute path", "write the path inside the container, e.g. /workspace/aiter."
        )
    return RepoRow(repo=cells["repo"], path=_host_path(where, cells["path"]), container=cells["container"], mount=mount)


def _container(where: _Where, cells: dict[str, str | None]) -> ContainerRow:
    problem = row_problem(cells) or _host_name_problem(cells.get("name"))
    if problem:
        raise where.error(*problem)
    return ContainerRow(
        name=cells["name"], image=cells["image"], host=cells["host"], mounts=cells.get("mounts"), env=cells.get("env")
    )


def _host_name_problem(name: str | None) -> tuple[str, str] | None:
    """(message, fix) for a container named as the host itself (``host``, or ``none`` as in
    --gpu-container none): its commands would run on the host, not in the container."""
    if name is None or not (name.strip().casefold() == HOST_CONTAINER or runs_on_host(name)):
        return None
    return (
        f"container {name!r} has the name of the host itself, so its commands would run on the host, "
        "not in the container",
        f"rename the container (`docker rename {name} {name}-dev`) and its row",
    )


def _gpu_lock(where: _Where, cells: dict[str, str | None]) -> GpuLockRow:
    spec = None
    if cells["lock"] is not None:
        try:
            spec = parse_lock_prefix(cells["lock"])
        except LockPrefixError as exc:
            raise where.error(exc.message, exc.fix) from None
    return GpuLockRow(host=cells["host"], picker=cells["picker"], lock=cells["lock"], lock_spec=spec)
