"""Words a declaration may use that the parsers give meaning to: a figure's direction and the
names of the verdict lines a run's printout is scanned for. Kept here so the declaration reader
checks them without loading the parsers; the parsers import them from here."""

from __future__ import annotations

import re

HIGHER, LOWER = "higher", "lower"
DIRECTIONS = (HIGHER, LOWER)

# each a family of statements a harness prints to say pass or fail (parsers/reading/statements.py)
VERDICT_LINE_NAMES = (
    "check-mark",
    "allclose",
    "correctness",
    "word-with-figure",
    "word-alone",
    "tests-summary",
    "status-word",
    "boolean",
    "failure-phrase",
    "match-phrase",
)


def pattern_problem(text: str) -> str | None:
    """Why ``text`` is not a regular expression Python compiles, or None (declarations check theirs)."""
    try:
        re.compile(text)
    except re.error as exc:
        return str(exc)
    return None
