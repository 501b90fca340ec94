"""Where two sets of the autotuner's choices (records/artifact.py ``AutotuneChoice``) differ: the one rule the
engine (--gpu-ab's two sides) and ``gpuverify compare`` (two artifacts) both say it by."""

from __future__ import annotations

from pytest_gpuverify.records.artifact import AutotuneChoice

SHOWN = 5  # functions named in a note; every one is in the list it sums up


def config_text(config: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


def differing(
    base: list[AutotuneChoice], head: list[AutotuneChoice], labels: tuple[str, str] = ("A", "B")
) -> list[str]:
    """Each function (and tuning key) both tuned whose chosen configurations differ:
    ``name key: A <config> | B <config>`` (several configurations of one side joined by `` / ``)."""
    by: dict[tuple[str, str | None], tuple[set[str], set[str]]] = {}
    for which, choices in ((0, base), (1, head)):
        for c in choices:
            by.setdefault((c.function, c.key), (set(), set()))[which].add(config_text(c.config))
    found = []
    for (function, key), (a, b) in by.items():
        if a and b and a != b:
            name = function + (f" {key}" if key else "")
            found.append(f"{name}: {labels[0]} {' / '.join(sorted(a))} | {labels[1]} {' / '.join(sorted(b))}")
    return found


def differ_note(differ: list[str], who: str = "the sides") -> str | None:
    """The note a difference gets (None where there is none)."""
    if not differ:
        return None
    names = [d.split(":", 1)[0] for d in differ]
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return (
        f"autotune: {who} chose different configurations for {len(names)} function(s): "
        f"{', '.join(names[:SHOWN])}{more}: a difference in speed may be the tuning's"
    )
