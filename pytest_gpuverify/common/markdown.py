"""Text a run printed, made inert in the markdown the product writes (CI summaries, PR comments, issue
bodies, compare tables).

A kernel's output is not ours: a printed ``<img src=x onerror=...>``, ``<a href=...>`` or ``<script>``
must show as those characters, not become the page's markup, and a backtick, ``[``, ``|`` or ``*`` must
not open a code span, a link, a new cell or emphasis. :func:`text` escapes HTML's three characters as
entities (which every markdown renderer leaves as text) and markdown's own with a backslash;
:func:`code` wraps text in a code span whose fence no backtick inside can close.
"""

from __future__ import annotations

import re

_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# HTML's three characters, markdown's inline punctuation that opens something mid-line (a code span, a
# cell, emphasis, strikethrough), and a ``]`` that a link or an image needs (``](`` or ``][``: a line
# cannot define a reference, so a printed interval ``[1.18, 1.21]`` keeps reading as it was printed).
# ``_`` is left alone: GFM never reads it as emphasis inside a word (``max_abs_error``), where it is common.
_SPECIAL = re.compile(r"[&<>\\`*|~]|\](?=[(\[])")
_BREAKS = re.compile(r"[\r\n]+")
_TICKS = re.compile(r"`+")


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    return _HTML.get(ch) or "\\" + ch  # a backslash makes any ASCII punctuation literal in CommonMark and GFM


def text(value: object) -> str:
    """``value`` as inert inline markdown on one line (a table's cell, a list item)."""
    return _SPECIAL.sub(_escape, _BREAKS.sub(" ", str(value)))


def code(value: object, in_table: bool = True) -> str:
    """``value`` as a code span on one line: inside it ``<``, ``&`` and ``[`` are literal; its fence is one
    backtick longer than the longest run of them inside. ``in_table``: a ``|`` is escaped, as GFM splits
    a table's cells before it reads code spans."""
    body = _BREAKS.sub(" ", str(value))
    if not body:
        return ""
    if in_table:
        body = body.replace("|", "\\|")
    fence = "`" * (max((len(m) for m in _TICKS.findall(body)), default=0) + 1)
    pad = " " if body[0] == "`" or body[-1] == "`" else ""
    return f"{fence}{pad}{body}{pad}{fence}"
