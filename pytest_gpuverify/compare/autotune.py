"""The autotuner's choices behind each side: a note (never a veto) where the two tuned the same function to
different configurations, since a difference in speed may then be the tuning's rather than the code's."""

from __future__ import annotations

from pytest_gpuverify.records.artifact import Artifact, AutotuneChoice
from pytest_gpuverify.records.autotune import differ_note, differing


def own_choices(art: Artifact) -> list[AutotuneChoice]:
    """An artifact's own choices: the head side's (B) of an A/B artifact, every one of another."""
    choices = art.autotune.choices if art.autotune is not None else []
    return [c for c in choices if c.side == "B"] if art.ab is not None else list(choices)


def autotune_notes(base: Artifact, head: Artifact | None) -> list[str]:
    """One A/B artifact: its sides' difference (``autotune.differ``); two artifacts: their own choices'."""
    if head is None:
        found = base.autotune.differ if base.autotune is not None else []
        note = differ_note(found)
    else:
        note = differ_note(differing(own_choices(base), own_choices(head), ("base", "head")), "the base and the head")
    return [note] if note else []
