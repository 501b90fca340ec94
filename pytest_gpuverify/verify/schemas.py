"""Each ``schema_version``'s artifact: the fields its engine always wrote, so that ``check`` holds an
artifact to the schema it claims. A field dropped (``run`` from a schema-2 artifact, which would
otherwise read as an old one) or a file with a topic and a time only is an error naming the field.

The engine dumps every field of the model, defaults included; a field missing from a file is one
someone removed. Field sets are frozen per version here, not read off the model, so that a field
added later does not make older artifacts fail.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pytest_gpuverify.records.artifact import SCHEMA_VERSION, Artifact

_V1 = frozenset(
    "schema_version plugin_version key topic ts finished_ts duration_s host container image gpu gpus versions repos "
    "target command workdir env imports cold cache_dirs correctness perf verdict reasons notes exit_code timed_out "
    "raw_output raw_output_sha256 raw_output_bytes".split()
)
_V1_LATER = frozenset({"cache_reused", "junit_xml"})  # added while the version was 1: may be there or not
_V2 = _V1 | _V1_LATER | {"run"}
_V3 = _V2 | {"host_gpus", "signed_by", "timeline"}
_V4 = _V3 | frozenset(
    {"image_digest", "fresh_container", "builds", "synced", "runs", "perf_summary", "ab"}
)  # fields added in version 4
_V5 = _V4 | frozenset({"watch"})  # fields added in version 5
# added while the version was 5, with defaults: older artifacts of that version do not have them
_V5_LATER = frozenset({"shard", "scheduler", "machine", "import_origins", "autotune", "profiles", "kernels"})
TOP_FIELDS: dict[int, frozenset[str]] = {1: _V1, 2: _V2, 3: _V3, 4: _V4, 5: _V5}
# fields added while a version was current: an artifact of that version may have them or not
LATER: dict[int, frozenset[str]] = {1: _V1_LATER, 5: _V5_LATER}

_RUN = frozenset(
    "blocked ran exit_code timed_out interrupted container_died output_problems unknowns output_parsed".split()
)
_TARGET_V1 = frozenset("name kind path args dtype regime thresholds".split())
_GPU = frozenset("index hip_index arch name uuid lock_path".split())
_CORRECTNESS = frozenset(
    "passed rtol atol nan_count snr_db shapes_checked checks_passed checks_warning checks_failed cosine_sim "
    "max_abs_error logits_diff".split()
)
# nested records the engine always writes whole, per version: field -> its keys
NESTED: dict[int, dict[str, frozenset[str]]] = {
    1: {"gpu": _GPU},  # version 1 grew its target record and correctness fields over time
    2: {"run": _RUN, "target": _TARGET_V1, "gpu": _GPU, "correctness": _CORRECTNESS},
    3: {
        "run": _RUN | {"leftovers"},
        "target": _TARGET_V1 | {"command", "pass_pattern", "fail_pattern", "floors", "ceilings"},
        "gpu": _GPU,
        "correctness": _CORRECTNESS | {"dtype", "dtype_source", "err_ratio"},
    },
}
NESTED[4] = {
    k: v | (frozenset({"repeats", "min_steps"}) if k == "target" else frozenset()) for k, v in NESTED[3].items()
}  # nested keys added in version 4 join here
_ADDED_5 = {
    "target": frozenset({"packages", "env", "directions", "verdict_lines_off", "exit_status_is_check"}),
    "run": frozenset({"shared"}),
}
NESTED[5] = {
    k: v | _ADDED_5.get(k, frozenset()) for k, v in NESTED[4].items()
}  # nested keys added in version 5 join here
# nested keys added while a version was current, with defaults: older artifacts of that version do not have them
NESTED_LATER: dict[int, dict[str, frozenset[str]]] = {5: {"run": frozenset({"imports_outside", "trace_doubts"})}}
# each record of ``builds[]`` (version 4); keys added after version 4's first builds may be absent
_BUILD = frozenset(
    "name command gpu gpus container workdir exit_code timed_out problem output output_sha256 "
    "output_bytes duration_s".split()
)
BUILD_LATER = frozenset({"side", "lock_taken", "lock_released"})
BUILD_KEYS = _BUILD | BUILD_LATER
NOT_NULL = {
    1: ("topic", "ts", "verdict"),
    2: ("topic", "ts", "verdict", "run", "target"),
    3: ("topic", "ts", "verdict", "run", "target"),
    4: ("topic", "ts", "verdict", "run", "target"),
    5: ("topic", "ts", "verdict", "run", "target"),
}
assert max(TOP_FIELDS) == SCHEMA_VERSION


class SchemaError(Exception):
    """The file is not an artifact of the schema it claims; ``problems`` name the fields."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def load_checked(path: Path) -> Artifact:
    """The artifact at ``path``, held to its ``schema_version``'s fields; SchemaError if it is not."""
    try:
        data = json.loads(Path(path).read_bytes())
    except (UnicodeDecodeError, ValueError) as exc:
        raise SchemaError([f"the file is not JSON ({exc})"]) from None
    problems = schema_problems(data)
    if problems:
        raise SchemaError(problems)
    try:
        return Artifact.model_validate(data)
    except ValidationError as exc:
        raise SchemaError([f"field {'.'.join(map(str, err['loc']))}: {err['msg']}" for err in exc.errors()]) from None


def schema_problems(data: Any) -> list[str]:
    if not isinstance(data, dict):
        return [f"the file holds a JSON {type(data).__name__}, not an artifact object"]
    version = data.get("schema_version")
    if type(version) is not int or version not in TOP_FIELDS:
        known = ", ".join(map(str, TOP_FIELDS))
        return [f"schema_version is {version!r}, not one this gpuverify knows ({known})"]
    problems = _keys(data, TOP_FIELDS[version], version, "", optional=LATER.get(version, frozenset()))
    problems += [
        f"field {name} is null, schema {version} requires a value"
        for name in NOT_NULL[version]
        if name in data and data[name] is None
    ]
    for name, keys in NESTED[version].items():
        value = data.get(name)
        if isinstance(value, dict):
            problems += _keys(
                value, keys, version, f"{name}.", optional=NESTED_LATER.get(version, {}).get(name, frozenset())
            )
    for i, gpu in enumerate(data.get("gpus") or []):
        if isinstance(gpu, dict):
            problems += _keys(gpu, _GPU, version, f"gpus[{i}].")
    builds = data.get("builds") if version >= 4 else None
    for i, build in enumerate(builds if isinstance(builds, list) else []):
        if isinstance(build, dict):
            problems += _keys(build, _BUILD, version, f"builds[{i}].", optional=BUILD_LATER)
    return problems


def _keys(
    data: dict, expected: frozenset[str], version: int, prefix: str, optional: frozenset[str] = frozenset()
) -> list[str]:
    missing = sorted(expected - data.keys())
    unknown = sorted(data.keys() - expected - optional)
    return [f"field {prefix}{name} is missing (schema {version} has it)" for name in missing] + [
        f"field {prefix}{name} is not in schema {version}" for name in unknown
    ]
