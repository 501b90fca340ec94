"""The per-key value checks of the declaration reader: one method per kind of value a table holds.

Split from declarations.py by concern: that module finds the file, reads the TOML and walks its
tables and ``[[targets]]`` blocks, while this one checks single values (texts, regimes, counts,
threshold tables, argv words, regular expressions, workdirs) and phrases the one-line error for a
wrong one. The checks are a base class, so the reader keeps its ``error`` (which knows the file and
builds the DeclarationError) and everything stays importable from declarations.py as before.
"""

from __future__ import annotations

import difflib
import math
import re
import shlex
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_gpuverify.config.errors import DeclarationError
from pytest_gpuverify.config.targets import AITER_OP_TEST, BENCH, Thresholds
from pytest_gpuverify.config.vocabulary import DIRECTIONS, VERDICT_LINE_NAMES, pattern_problem

REGIMES = ("cold-L2", "warm", "hipGraph")
BOUND_KEYS = ("floors", "ceilings")  # tables of their own (floors.py), not threshold keys
THRESHOLD_KEYS = tuple(k for k in Thresholds.model_fields if k not in BOUND_KEYS)
_EXAMPLE_LIMITS = {
    "cosine_sim_min": 0.99,
    "max_abs_error_max": 0.01,
    "logits_diff_max": 0.002,
    "snr_db_min": 20,
    "err_ratio_max": 0.05,
}
_IMPORT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# what a declaration may not set: the locked GPUs, the import path, the run's marker (leftovers.py)
ENGINE_VARS = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "PYTHONPATH", "GPUVERIFY_RUN_ID")
_COMMAND_EXAMPLE = '"python3 bench/hillclimb.py --interleave"'


class FieldChecks:
    """Checks one value each; a subclass supplies ``root`` and ``error`` (declarations._Reader)."""

    root: Path

    def error(self, where: str, key: str | None, message: str, fix: str) -> DeclarationError:
        raise NotImplementedError

    def known_keys(
        self, table: dict[str, Any], where: str, allowed: tuple[str, ...], label: str, key_prefix: str = ""
    ) -> None:
        for key in table:
            if key not in allowed:
                hint = (
                    "write [[targets]] blocks (plural, double brackets); "
                    if key == "target" and "targets" in allowed
                    else _did_you_mean(key, allowed)
                )
                raise self.error(
                    where,
                    key_prefix + key,
                    f"unknown key {key!r}",
                    f"{hint}the allowed {label}keys are: {', '.join(allowed)}.",
                )

    def text(self, where: str, key: str, value: Any, example: str, required: bool = False) -> Any:
        if value is None and required:
            raise self.error(where, key, f"the target has no {key}", f"add {key} = {example}.")
        if value is not None and (not isinstance(value, str) or not value.strip()):
            got = "an empty string" if isinstance(value, str) else _kind_of(value)
            raise self.error(
                where, key, f"{key} is {got}, not a text value", f"write it as a quoted string, e.g. {key} = {example}."
            )
        return value.strip() if value is not None else None

    def regime(self, where: str, value: Any) -> str | None:
        text = self.text(where, "regime", value, '"cold-L2"')
        canonical = next((r for r in REGIMES if text and r.casefold() == text.casefold()), None)
        if text is not None and canonical is None:
            raise self.error(
                where,
                "regime",
                f"regime {text!r} is not a timing regime",
                f"{_did_you_mean(text, REGIMES)}use one of: {', '.join(REGIMES)}.",
            )
        return canonical

    def count(self, where: str, key: str, value: Any) -> int | None:
        """``repeats``/``min_steps``: a whole number >= 1 (runs_log.py)."""
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise self.error(
                where,
                key,
                f"{key} is {value!r}, not a whole number >= 1",
                f"write it without quotes, e.g. {key} = {3 if key == 'repeats' else 50}.",
            )
        return value

    def gpus(self, where: str, value: Any) -> int | None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise self.error(
                where,
                "gpus",
                f"gpus is {_kind_of(value)}, not a whole number",
                "write the GPU count without quotes, e.g. gpus = 1.",
            )
        if value is not None and value < 1:
            raise self.error(where, "gpus", f"gpus is {value}; a run needs at least one GPU", "write gpus = 1 or more.")
        return value

    def thresholds(self, where: str, value: Any) -> dict[str, float]:
        return self.numbers(where, "thresholds", value, "{ cosine_sim_min = 0.99 }")

    def bounds(self, where: str, key: str, value: Any) -> dict[str, float]:
        """``floors``/``ceilings``: a table of metric or row name -> a finite number (floors.py)."""
        return self.numbers(
            where, key, value, '{ "output tok/s" = 53.0 }' if key == "floors" else "{ us_median = 120.0 }"
        )

    def directions(self, where: str, value: Any) -> dict[str, str]:
        """``directions``: a table of metric or row name -> "higher" or "lower" (parsers/figures.py)."""
        if value is None:
            return {}
        example = '{ uplift = "higher", "max err" = "lower" }'
        if not isinstance(value, dict):
            raise self.error(
                where,
                "directions",
                f"directions is {_kind_of(value)}, not a table",
                f"write a table, e.g. directions = {example}.",
            )
        for name, way in value.items():
            if way not in DIRECTIONS:
                got = repr(way) if isinstance(way, str) else _kind_of(way)
                raise self.error(
                    where,
                    f"directions.{name}",
                    f"{name} is {got}, not a direction",
                    f'write "higher" (higher is better) or "lower", e.g. directions = {example}.',
                )
        return dict(value)

    def numbers(self, where: str, key: str, value: Any, example: str) -> dict[str, float]:
        """A table of name -> finite number; threshold names are the known ones, floor names any."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(
                where, key, f"{key} is {_kind_of(value)}, not a table", f"write a table, e.g. {key} = {example}."
            )
        if key == "thresholds":
            self.known_keys(value, where, THRESHOLD_KEYS, "threshold ", "thresholds.")
        limits: dict[str, float] = {}
        for name, limit in value.items():
            number = _finite(limit)
            if number is None:
                got = repr(limit) if _kind_of(limit) == "a number" else _kind_of(limit)
                hint = f"{name} = {_EXAMPLE_LIMITS.get(name, 0.01)}" if key == "thresholds" else f"{key} = {example}"
                raise self.error(
                    where,
                    f"{key}.{name}",
                    f"{name} is {got}, not a finite number",
                    f"write a plain number without quotes, e.g. {hint}.",
                )
            limits[name] = number
        return limits

    def argv(self, where: str, key: str, value: Any) -> tuple[str, ...]:
        example = _COMMAND_EXAMPLE if key == "command" else '["-d", "bf16"]'
        if isinstance(value, str):
            try:
                words = tuple(shlex.split(value))
            except ValueError as exc:
                raise self.error(
                    where,
                    key,
                    f"{key} cannot be split into words ({exc})",
                    "close the quote, or write a list of strings.",
                ) from None
        elif isinstance(value, (list, tuple)) and all(isinstance(word, str) for word in value):
            words = tuple(value)
        else:
            bad = [w for w in value if not isinstance(w, str)] if isinstance(value, list) else []
            got = f"a list holding {_kind_of(bad[0])} {bad[0]!r}" if bad else _kind_of(value)
            raise self.error(
                where,
                key,
                f"{key} is {got}; it must be a string or a list of strings",
                f"quote every word, e.g. {key} = {example}.",
            )
        if not words and key == "command":
            raise self.error(where, key, "command is empty", f"write it, e.g. command = {example}.")
        return words

    def pattern(self, where: str, key: str, value: Any) -> str | None:
        text = self.text(where, key, value, '"Triton and Torch match"')
        problem = pattern_problem(text) if text is not None else None
        if problem:
            raise self.error(
                where,
                key,
                f"{key} is not a regular expression ({problem})",
                "escape the special characters with a backslash, e.g. '\\(' for '('.",
            )
        return text

    def packages(self, where: str, value: Any) -> tuple[str, ...] | None:
        """``packages``: the import packages under test (top-level names); ``[]`` checks none."""
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) and _IMPORT_NAME.fullmatch(v) for v in value):
            raise self.error(
                where,
                "packages",
                f"packages is {value!r}, not a list of import names",
                'write the top-level names your tests import, e.g. packages = ["kernelkit"] (or [] to check none).',
            )
        return tuple(value)

    def env(self, where: str, value: Any) -> dict[str, str]:
        """``env``: variables for the target's command and its builds (a table of strings); the GPUs, the
        import path and the run's marker are the engine's."""
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise self.error(
                where,
                "env",
                f"env is {_kind_of(value)}, not a table of strings",
                'write it as a table of quoted values, e.g. env = { GPU_ARCHS = "gfx942" }.',
            )
        for name in value:
            if not _ENV_NAME.fullmatch(name):
                raise self.error(
                    where,
                    f"env.{name}",
                    f"{name!r} is not a variable name",
                    "use letters, digits and _ (not starting with a digit).",
                )
            if name in ENGINE_VARS:
                raise self.error(
                    where,
                    f"env.{name}",
                    f"{name} is set by the engine for every run",
                    "drop it: the GPUs come from the lock, the import path from the worktree.",
                )
        return dict(value)

    def verdict_lines_off(self, where: str, value: Any) -> tuple[str, ...]:
        """Names of default verdict lines not to read."""
        key = "verdict_lines_off"
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(
                where,
                key,
                f"{key} is {_kind_of(value)}, not a list of names",
                f'write a list of quoted names, e.g. {key} = ["word-alone"].',
            )
        for name in value:
            if name not in VERDICT_LINE_NAMES:
                raise self.error(
                    where,
                    key,
                    f"{name!r} is not a verdict line",
                    f"{_did_you_mean(name, VERDICT_LINE_NAMES)}name one of: {', '.join(VERDICT_LINE_NAMES)}.",
                )
        return tuple(dict.fromkeys(value))

    def exit_status_is_check(self, where: str, kind: str, value: Any) -> bool:
        """An assert-only script: its exit status is its check (a pytest target's are its tests)."""
        key = "exit_status_is_check"
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.error(
                where, key, f"{key} is {_kind_of(value)}, not true or false", f"write {key} = true (without quotes)."
            )
        if value and kind not in (BENCH, AITER_OP_TEST):
            raise self.error(
                where,
                key,
                f"{key} is for a script or harness; kind is {kind}, whose outcomes are its tests'",
                f'drop {key}, or declare the script with kind = "{BENCH}".',
            )
        return value

    def globs(self, where: str, value: Any) -> tuple[str, ...]:
        """``paths``: globs of more files that are the target's, relative to the declaration's directory."""
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.error(
                where,
                "paths",
                f"paths is {_kind_of(value)}, not a list of globs",
                'write a list of quoted globs relative to this file\'s directory, e.g. paths = ["csrc/gemm/**"].',
            )
        for glob in value:
            pure = PurePosixPath(glob.strip().removeprefix("./"))
            if pure.is_absolute() or ".." in pure.parts:
                raise self.error(
                    where,
                    "paths",
                    f"paths names {glob!r}, outside this file's directory",
                    'write a glob relative to this file\'s directory, e.g. "csrc/gemm/**".',
                )
        return tuple(v.strip().removeprefix("./") for v in value)

    def workdir(self, where: str, value: Any) -> str | None:
        text = self.text(where, "workdir", value, '"."')
        pure = PurePosixPath(text) if text is not None else None
        if pure is not None and (pure.is_absolute() or ".." in pure.parts):
            raise self.error(
                where,
                "workdir",
                f"workdir {text!r} leaves the worktree",
                'write a path relative to the worktree, e.g. workdir = "bench".',
            )
        return str(pure) if pure is not None else None


def _kind_of(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "a table"}
    return names.get(type(value), f"a {type(value).__name__}")


def _finite(value: Any) -> float | None:
    finite = (type(value) is float and math.isfinite(value)) or (type(value) is int and abs(value) < 1e300)
    return float(value) if finite else None


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f"did you mean {close[0]!r}? " if close else ""
