"""Markdown scanning for the env file: level-2 sections, pipe tables, their cells and cell values.

Split from envfile.py by concern: this module knows only Markdown (headings, code fences, pipe
tables, escaped pipes, code spans, `not set`) and turns text into numbered lines and cells, raising
nothing; envfile.py keeps the facts (the row models, the per-section checks and the one-line
EnvFileError). SECTION_COLUMNS lives here because finding a section needs its name, and it stays
importable from envfile.py as before.
"""

from __future__ import annotations

import re

# Section name as the reference example writes it -> its required columns, in header order.
SECTION_COLUMNS: dict[str, tuple[str, ...]] = {
    "Resources": ("resource", "path"),
    "Hosts": ("host", "ssh alias", "arch", "gpus"),
    "Repos": ("repo", "path", "container", "mount"),
    "Containers": ("name", "image", "host"),
    "GPU lock": ("host", "picker", "lock"),
    "Signing": ("signer", "key"),  # optional: signing.py
    "Slurm": ("setting", "value"),  # optional: the Slurm launcher's settings (slurm_settings.py)
}
_SECTION_BY_KEY = {name.casefold(): name for name in SECTION_COLUMNS}
_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_SEPARATOR_CELL = re.compile(r":?-+:?")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # Markdown's line ends; str.splitlines also splits on \x0c etc.

NumberedLine = tuple[int, str]


def _split_sections(lines: list[str]) -> list[tuple[str, list[NumberedLine]]]:
    """Known level-2 sections with their numbered lines; fenced code and other text are skipped."""
    sections: list[tuple[str, list[NumberedLine]]] = []
    current: list[NumberedLine] | None = None
    fence: str | None = None
    for number, line in enumerate(lines, start=1):
        fence_mark = _FENCE.match(line)
        if fence is not None:  # inside a code block: a `## Hosts` here is an example, not a section
            if fence_mark and fence_mark.group(1).startswith(fence):
                fence = None
            continue
        heading = _HEADING.fullmatch(line)
        if fence_mark:
            fence = fence_mark.group(1)
        elif heading and len(heading.group(1)) <= 2:  # a level-3 heading stays in its section
            section = _SECTION_BY_KEY.get(" ".join((heading.group(2) or "").split()).casefold())
            current = [] if section and len(heading.group(1)) == 2 else None
            if section and current is not None:
                sections.append((section, current))
        elif current is not None:
            current.append((number, line))
    return sections


def _find_tables(body: list[NumberedLine]) -> list[list[NumberedLine]]:
    """Pipe tables: a header row, a separator row, then rows up to a blank or pipe-less line."""
    tables: list[list[NumberedLine]] = []
    start = 0
    while start + 1 < len(body):
        separator = _split_cells(body[start + 1][1])
        if (
            _UNESCAPED_PIPE.search(body[start][1])
            and _UNESCAPED_PIPE.search(body[start + 1][1])
            and all(_SEPARATOR_CELL.fullmatch(cell) for cell in separator)
        ):
            end = start + 2
            while end < len(body) and _UNESCAPED_PIPE.search(body[end][1]):
                end += 1
            tables.append(body[start:end])
            start = end
        else:
            start += 1
    return tables


def _split_cells(line: str) -> list[str]:
    """Cells of one table line; outer pipes are optional and ``\\|`` is a literal pipe."""
    text = line.strip()
    cells = _UNESCAPED_PIPE.split(text)
    if text.startswith("|"):
        cells = cells[1:]
    if text.endswith("|") and not text.endswith("\\|") and cells:
        cells = cells[:-1]
    return [cell.replace("\\|", "|").strip() for cell in cells]


def _cell_value(raw: str) -> str | None:
    """A cell's text with one wrapping code span removed; empty or `not set` is unset (None)."""
    span = re.fullmatch(r"(`+)(.*)\1", raw, flags=re.DOTALL)
    if span and span.group(1) not in span.group(2):  # `a` and `b` is two spans: keep it whole
        raw = span.group(2).strip()
    if not raw or " ".join(raw.split()).casefold() == "not set":
        return None
    return raw
