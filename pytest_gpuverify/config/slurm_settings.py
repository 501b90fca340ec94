"""The env file's optional ``Slurm`` section: the launcher's settings (``--gpu-slurm``), one row each.

| setting | value |
|---|---|
| partition | gpu |
| account | kernels |
| time | 00:30:00 |
| gpus per target | 1 |
| start within | 600 |
| python | /opt/venv/bin/python3 |
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

# Slurm's --time forms: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS
_TIME = re.compile(r"\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d{1,2}(:\d{1,2}(:\d{1,2})?)?")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
SETTINGS = ("partition", "account", "time", "gpus per target", "start within", "python")


class SlurmSettings(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    partition: str | None = None  # None: the cluster's default partition
    account: str | None = None
    time: str | None = None  # each job's time limit (sbatch --time); None: the partition's
    gpus_per_target: int | None = None  # None: each target's own count (a declaration's gpus, else 1)
    start_within_s: float = 600.0  # a job still pending after this is cancelled: INCONCLUSIVE
    python: str | None = None  # the interpreter on the nodes; None: the controller's own


def slurm_settings(rows: list) -> SlurmSettings:
    """The settings from the section's rows (``(where, cells)`` as envfile reads them); a bad row raises
    the envfile error that names it."""
    values: dict[str, object] = {}
    for where, cells in rows:
        name = " ".join((cells["setting"] or "").casefold().replace("_", " ").replace("-", " ").split())
        value = cells["value"]
        if name not in SETTINGS:
            raise where.error(
                f"setting {cells['setting']!r} is not one the Slurm launcher reads",
                f"use one of: {', '.join(SETTINGS)}.",
            )
        if value is None:
            continue
        if name in ("partition", "account") and not _NAME.fullmatch(value):
            raise where.error(f"{name} {value!r} is not a Slurm name", f"write the {name}'s name, e.g. gpu.")
        if name == "time" and not _TIME.fullmatch(value):
            raise where.error(
                f"time {value!r} is not a Slurm time limit", "write minutes (30), HH:MM:SS (00:30:00) or D-HH:MM:SS."
            )
        if name == "gpus per target" and not (value.isdigit() and 1 <= int(value) <= 64):
            raise where.error(f"gpus per target {value!r} is not a whole number from 1 to 64", "e.g. 1.")
        if name == "start within":
            try:
                seconds = float(value)
            except ValueError:
                seconds = -1.0
            if not 1 <= seconds < 10**7:
                raise where.error(f"start within {value!r} is not a number of seconds", "e.g. 600.")
        if name == "python" and not value.startswith("/"):
            raise where.error(f"python {value!r} is not an absolute path", "e.g. /opt/venv/bin/python3.")
        key = {"gpus per target": "gpus_per_target", "start within": "start_within_s"}.get(name, name)
        values[key] = int(value) if name == "gpus per target" else float(value) if name == "start within" else value
    return SlurmSettings.model_validate(values)
