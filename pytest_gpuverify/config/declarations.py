"""Target declarations: a repo names its GPU targets once, in TOML, and runs them by name.

Where: from the start directory up to and including the stop directory (the worktree or pytest's
rootdir), the first directory with a ``gpuverify.toml`` (wins) or a ``pyproject.toml`` that has a
``[tool.gpuverify]`` table. A ``gpuverify.toml`` holds the same tables at its top level, without
the ``tool.gpuverify.`` prefix (``[thresholds]``, ``[[targets]]``). The ``pyproject.toml`` form::

    [tool.gpuverify]
    regime = "cold-L2"            # defaults for every target that does not set its own:
    dtype = "bf16"                #   regime, dtype, gpus, and thresholds (merged key by key)
    gpus = 1
    [tool.gpuverify.thresholds]
    cosine_sim_min = 0.99

    [[tool.gpuverify.targets]]
    name = "gemm-a8w8-bf16"       # required, unique; letters, digits and . _ -
    kind = "aiter-op-test"        # optional when `path` says it (op_tests/**, tests/kernels/**)
    path = "op_tests/test_gemm_a8w8.py"   # relative to this file's directory, inside its tree
    args = ["-d", "bf16", "-m", "128"]    # or one string "-d bf16 -m 128", split like a shell
    topic = "gemm_a8w8_bf16"      # artifact bench_<topic>.json; default: the name, file-safe
    dtype = "fp8"                 # fp8/fp4/mxfp4 outputs must print an SNR (docs/artifacts.md, "Verdicts")
    regime = "warm"               # cold-L2 | warm | hipGraph
    gpus = 1
    [tool.gpuverify.targets.thresholds]   # this target's limits, over the defaults
    max_abs_error_max = 0.01

    [[tool.gpuverify.targets]]
    name = "ab-harness"
    kind = "bench"                # required for a harness or script
    command = "python3 bench/hillclimb.py --interleave"   # a string or a list; bench only
    repo = "aiter"                # the env file's Repos row that holds it (optional)
    workdir = "."                 # relative to the worktree (optional)

Kinds: aiter-op-test, flydsl-pytest, triton-pytest, bench, pytest. A test target needs ``path`` (a
folder too, for kind pytest); a bench target needs ``command`` or ``path`` (run as ``python3
<path>``). Thresholds: cosine_sim_min, max_abs_error_max, logits_diff_max, snr_db_min,
err_ratio_max (each a finite number). ``pass_pattern``/``fail_pattern``: regular expressions for a
harness's own words of success and failure (compiled here), read beside the statements every
output is read for; ``verdict_lines_off = ["word-alone"]``: statement families not read
(parsers/reading/statements.py names them). ``paths = ["csrc/gemm/**", "aiter/ops/gemm*.py"]``: more files
that are the target's, globs relative to this file's directory, that ``--gpu-changed-since`` counts beside
its own file and the files its command names. ``exit_status_is_check = true``: the command's exit status is its check (an assert-only
script; bench and aiter-op-test kinds): exit 0 is one checked shape. ``repeats = 3``: runs under one lock
(``--gpu-repeats`` wins; runs_log.py); ``min_steps = 50``: the fewest timed steps each run must print
where it prints a count (each a whole number >= 1). ``directions = { uplift = "higher" }``: which way
is better for a printed figure that ``gpuverify compare`` cannot tell by its name (metric or row name
-> "higher" or "lower"; merged over the top level's key by key).

A mistake stops with one line naming the file, the place (``targets[2] (ab-harness) at line 20``
counts the ``[[targets]]`` blocks from 1), the key, and ending in ``Fix: ...``. Nothing is guessed.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pytest_gpuverify.config.builds import BuildStep, read_builds
from pytest_gpuverify.config.declaration_fields import (  # noqa: F401 (REGIMES, THRESHOLD_KEYS re-exported)
    BOUND_KEYS,
    REGIMES,
    THRESHOLD_KEYS,
    FieldChecks,
    _did_you_mean,
    _kind_of,
)
from pytest_gpuverify.config.errors import DeclarationError
from pytest_gpuverify.config.targets import BENCH, KINDS, PYTEST, Target, Thresholds, kind_for_path, safe_topic

DECLARATIONS_FILE = "gpuverify.toml"
PYPROJECT = "pyproject.toml"
TOP_KEYS = (
    "regime",
    "dtype",
    "gpus",
    "thresholds",
    "floors",
    "ceilings",
    "directions",
    "targets",
    "builds",
    "packages",
    "env",
)
TARGET_KEYS = (
    "name",
    "kind",
    "path",
    "command",
    "args",
    "topic",
    "dtype",
    "regime",
    "gpus",
    "thresholds",
    "floors",
    "ceilings",
    "repo",
    "workdir",
    "pass_pattern",
    "fail_pattern",
    "repeats",
    "min_steps",
    "packages",
    "env",
    "directions",
    "verdict_lines_off",
    "exit_status_is_check",
    "trace_filter",
    "paths",
)
_NAME = re.compile(r"[A-Za-z0-9._-]+")
_TOML_AT = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)\s*$")


class Defaults(BaseModel):
    """What every target gets unless it sets its own; thresholds merge key by key."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    regime: str | None = None
    dtype: str | None = None
    gpus: int | None = None  # None: one GPU
    thresholds: Thresholds = Field(default_factory=Thresholds)
    packages: tuple[str, ...] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    directions: dict[str, str] = Field(default_factory=dict)


class Declarations(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    path: Path  # the gpuverify.toml or pyproject.toml they were read from
    targets: list[Target] = Field(default_factory=list)
    defaults: Defaults = Field(default_factory=Defaults)
    builds: tuple[BuildStep, ...] = ()  # [[builds]]: run before the targets (builds.py)

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.targets]


def find_declarations(start: Path, stop: Path) -> Path | None:
    """The declaration file nearest ``start``, searching upward to and including ``stop``.

    A ``pyproject.toml`` counts only with a ``[tool.gpuverify]`` table; a broken one is skipped
    unless it mentions gpuverify (then its error is raised). When ``start`` is not inside ``stop``
    only ``stop`` is searched: the search never leaves the worktree."""
    stop, here = Path(stop).resolve(), Path(start).resolve()
    here = here.parent if here.is_file() else here
    if here != stop and stop not in here.parents:
        here = stop
    while True:
        if (here / DECLARATIONS_FILE).is_file():
            return here / DECLARATIONS_FILE
        if (here / PYPROJECT).is_file() and _pyproject_declares(here / PYPROJECT):
            return here / PYPROJECT
        if here == stop or here == here.parent:
            return None
        here = here.parent


def load_declarations(path: Path) -> Declarations:
    """Read and check a declaration file; one named pyproject.toml is read for [tool.gpuverify]."""
    file = Path(path)
    data, text = _read_toml(file)
    tool = data.get("tool")
    if file.name != PYPROJECT:
        if isinstance(tool, dict) and "gpuverify" in tool:
            raise DeclarationError(
                file,
                f"{file.name} uses the pyproject prefix tool.gpuverify",
                "drop the prefix here: write [thresholds] and [[targets]]; the prefix belongs in pyproject.toml.",
                where="top level",
                key="tool",
            )
        return _Reader(file, text, "").declarations(data)
    table = tool.get("gpuverify") if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        raise DeclarationError(
            file,
            "there is no [tool.gpuverify] table"
            if table is None
            else f"tool.gpuverify is {_kind_of(table)}, not a table",
            "add a [tool.gpuverify] table with [[tool.gpuverify.targets]] "
            f"blocks, or declare the targets in a {DECLARATIONS_FILE} beside it.",
        )
    return _Reader(file, text, "tool.gpuverify").declarations(table)


def select(decls: Declarations, names: Sequence[str]) -> list[Target]:
    """The named targets in the order named, each once; a name matches exactly, else ignoring case."""
    chosen: list[Target] = []
    for name in names:
        found = next((t for t in decls.targets if t.name == name), None) or next(
            (t for t in decls.targets if t.name.casefold() == name.casefold()), None
        )
        if found is None:
            fix = (
                f"{_did_you_mean(name, decls.names)}use one of the declared names: {', '.join(decls.names)}."
                if decls.targets
                else "declare it in a [[targets]] block first; this file declares none."
            )
            raise DeclarationError(decls.path, f"no target is named {name!r}", fix, where="targets")
        if found not in chosen:
            chosen.append(found)
    return chosen


def _pyproject_declares(file: Path) -> bool:
    try:
        if b"gpuverify" not in file.read_bytes():
            return False  # quick, and someone else's broken pyproject cannot declare targets
    except OSError:
        return False
    tool = _read_toml(file)[0].get("tool")  # mentions gpuverify: a TOML error here is raised
    return isinstance(tool, dict) and "gpuverify" in tool


def _read_toml(file: Path) -> tuple[dict[str, Any], str]:
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise DeclarationError(
            file,
            "the file does not exist",
            f"create a {DECLARATIONS_FILE} or a [tool.gpuverify] table in pyproject.toml.",
        ) from None
    except OSError as exc:
        raise DeclarationError(
            file, f"cannot read the file ({exc.strerror or exc})", "make the file readable."
        ) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DeclarationError(
            file,
            f"byte 0x{data[exc.start]:02x} is not UTF-8",
            "save the file as UTF-8 text, as TOML requires.",
            where=f"line {line}",
        ) from None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        at = _TOML_AT.search(reason := str(exc))
        where = f"line {at.group(1)}, column {at.group(2)}" if at and at.group(1) else "end of file" if at else None
        raise DeclarationError(
            file,
            f"not valid TOML: {reason[: at.start()] if at else reason}",
            "correct the TOML there: strings need quotes and lists brackets, e.g. "
            'args = ["-d", "bf16"] (see https://toml.io).',
            where=where,
        ) from None


class _Reader(FieldChecks):
    """Checks one file's tables; knows the prefix to show and the line of each [[targets]] block."""

    def __init__(self, file: Path, text: str, prefix: str) -> None:
        self.file, self.prefix, self.root = file, prefix, file.resolve().parent
        self.dotted = f"{prefix}." if prefix else ""  # what table names start with
        dotted = r"\s*\.\s*".join([*prefix.split("."), "targets"] if prefix else ["targets"])
        header = re.compile(rf"\s*\[\[\s*{dotted}\s*\]\]")
        self.target_lines = [n for n, line in enumerate(text.splitlines(), 1) if header.match(line)]

    def error(self, where: str, key: str | None, message: str, fix: str) -> DeclarationError:
        return DeclarationError(self.file, message, fix, where=where, key=key)

    def declarations(self, data: dict[str, Any]) -> Declarations:
        top = f"[{self.prefix}]" if self.prefix else "top level"
        self.known_keys(data, top, TOP_KEYS, "")
        defaults = Defaults(
            regime=self.regime(top, data.get("regime")),
            dtype=self.text(top, "dtype", data.get("dtype"), '"bf16"'),
            gpus=self.gpus(top, data.get("gpus")),
            packages=self.packages(top, data.get("packages")),
            env=self.env(top, data.get("env")),
            thresholds=Thresholds(
                **self.thresholds(top, data.get("thresholds")),
                **{k: self.bounds(top, k, data.get(k)) for k in BOUND_KEYS},
            ),
            directions=self.directions(top, data.get("directions")),
        )
        blocks = data.get("targets", [])
        if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
            raise self.error(
                top,
                "targets",
                f"targets is {_kind_of(blocks)}, not a list of tables",
                f"write each target as its own [[{self.dotted}targets]] block (double brackets).",
            )
        if len(self.target_lines) != len(blocks):
            self.target_lines = []  # an inline array of tables: no header line to point at
        targets: list[Target] = []
        seen: dict[tuple[str, str], str] = {}
        for index, block in enumerate(blocks, start=1):
            target, where = self.target(index, block, defaults)
            for key, value in (("name", target.name), ("topic", target.topic)):
                if (key, value.casefold()) in seen:
                    fix = (
                        "give every target its own name."
                        if key == "name"
                        else "set topic = "
                        '"..." to a unique one: two targets with one topic would write the same '
                        "bench_<topic>.json."
                    )
                    raise self.error(
                        where, key, f"{key} {value!r} is already used by {seen[key, value.casefold()]}", fix
                    )
                seen[key, value.casefold()] = where
            targets.append(target)
        return Declarations(
            path=self.file,
            targets=targets,
            defaults=defaults,
            builds=read_builds(data.get("builds"), self.error, self.argv),
        )

    def target(self, index: int, block: dict[str, Any], defaults: Defaults) -> tuple[Target, str]:
        name = block.get("name")
        where = (
            f"targets[{index}]"
            + (f" ({name})" if isinstance(name, str) and name else "")
            + (f" at line {self.target_lines[index - 1]}" if self.target_lines else "")
        )
        self.known_keys(block, where, TARGET_KEYS, "[[targets]] ")
        name = self.text(where, "name", name, '"gemm-a8w8-bf16"', required=True)
        if not _NAME.fullmatch(name):
            raise self.error(
                where,
                "name",
                f"name {name!r} has characters other than letters, digits and . _ -",
                f"rename it, e.g. name = {safe_topic(name)!r}.",
            )
        kind = self.text(where, "kind", block.get("kind"), '"aiter-op-test"')
        if kind is not None and kind not in KINDS:
            raise self.error(
                where,
                "kind",
                f"kind {kind!r} is not a target kind",
                f"{_did_you_mean(kind, KINDS)}use one of: {', '.join(KINDS)}.",
            )
        path, command = block.get("path"), block.get("command")
        if path is None and command is None:
            raise self.error(
                where,
                "path",
                "path and command are both missing",
                'add command = "python3 bench/<script>.py" or path = "bench/<script>.py".'
                if kind == BENCH
                else 'add path = "op_tests/test_<op>.py", the test file relative to this file\'s directory.',
            )
        resolved = self.path(where, path, folder_ok=kind == PYTEST) if path is not None else None
        if kind is None:
            kind = resolved and (kind_for_path(resolved.relative_to(self.root)) or kind_for_path(resolved))
            if kind is None:
                said = f"path {path!r} does not say" if path is not None else "nothing says"
                raise self.error(
                    where,
                    "kind",
                    f"{said} which kind of target this is",
                    f'add kind = "{BENCH}" for a harness or script, or kind = one of: {", ".join(KINDS)}.',
                )
        if command is not None and kind != BENCH:
            raise self.error(
                where,
                "command",
                f"command is given, but kind is {kind}",
                "drop command (a test target runs its path, with args for flags), or "
                f'set kind = "{BENCH}" for a harness with its own command.',
            )
        topic = self.text(where, "topic", block.get("topic"), '"gemm_a8w8_bf16"')
        if topic is not None and safe_topic(topic) != topic:
            raise self.error(
                where,
                "topic",
                f"topic {topic!r} is not safe in a file name",
                f"write topic = {safe_topic(topic)!r} (letters, digits and . _ -).",
            )
        gpus = self.gpus(where, block.get("gpus"))
        limits = self.thresholds(where, block.get("thresholds"))
        dtype = self.text(where, "dtype", block.get("dtype"), '"fp8"')
        return Target(
            name=name,
            kind=kind,
            path=resolved,
            topic=topic or safe_topic(name),
            command=self.argv(where, "command", command) if command is not None else None,
            args=self.argv(where, "args", block.get("args", ())),
            gpus=gpus if gpus is not None else defaults.gpus or 1,
            dtype=dtype if dtype is not None else defaults.dtype,
            regime=self.regime(where, block.get("regime")) or defaults.regime,
            thresholds=Thresholds(
                **{
                    **defaults.thresholds.model_dump(exclude_none=True),
                    **limits,
                    **{
                        k: {**getattr(defaults.thresholds, k), **self.bounds(where, k, block.get(k))}
                        for k in BOUND_KEYS
                    },
                }
            ),
            repo=self.text(where, "repo", block.get("repo"), '"aiter"'),
            workdir=self.workdir(where, block.get("workdir")),
            repeats=self.count(where, "repeats", block.get("repeats")),
            min_steps=self.count(where, "min_steps", block.get("min_steps")),
            packages=p if (p := self.packages(where, block.get("packages"))) is not None else defaults.packages,
            env={**defaults.env, **self.env(where, block.get("env"))},
            directions={**defaults.directions, **self.directions(where, block.get("directions"))},
            verdict_lines_off=self.verdict_lines_off(where, block.get("verdict_lines_off")),
            exit_status_is_check=self.exit_status_is_check(where, kind, block.get("exit_status_is_check")),
            paths=tuple(f"{self.root.as_posix()}/{glob}" for glob in self.globs(where, block.get("paths"))),
            **{
                key: self.pattern(where, key, block.get(key))
                for key in ("pass_pattern", "fail_pattern", "trace_filter")
            },
        ), where

    def path(self, where: str, value: Any, folder_ok: bool = False) -> Path:
        text = self.text(where, "path", value, '"op_tests/test_gemm_a8w8.py"')
        if "::" in text:
            raise self.error(
                where,
                "path",
                f"path {text!r} names a test inside the file",
                f'write path = {text.split("::")[0]!r} and pick the test with args, e.g. args = ["-k", "<test name>"].',
            )
        resolved = (self.root / text).resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise self.error(
                where,
                "path",
                f"path {text!r} is outside {self.root}",
                "give a path inside this file's directory, or declare the target in "
                f"a {DECLARATIONS_FILE} of the repo that holds it.",
            )
        if not (resolved.is_file() or (folder_ok and resolved.is_dir())):
            problem = "is not a file" if resolved.exists() else f"does not exist ({resolved})"
            raise self.error(
                where,
                "path",
                f"path {text!r} {problem}",
                "name the test file or script itself, relative to this file's directory.",
            )
        return resolved
