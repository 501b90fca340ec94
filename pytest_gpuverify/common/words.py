"""Words for the printout."""

from __future__ import annotations


def counted(n: object, noun: str) -> str:
    """``1 shape``, ``3 shapes``: a count with its noun in the number it needs."""
    return f"{n} {noun}" if str(n) == "1" else f"{n} {noun}s"
