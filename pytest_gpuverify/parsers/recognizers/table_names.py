"""Which printed table a row is of, where one process prints a table again under the same title (or
again with no title): a Triton ``perf_report`` run for ``causal=False`` and then ``causal=True`` prints
one plot name twice, and a harness's loop over its settings prints one table per setting.

A row's key is (table, shape, name, stat, metric); two tables of one title would give rows of one key,
and a compare would take the median of both settings as one figure. So a table printed again in one
process whose rows repeat a key of an earlier table of its title is told apart:

- by the settings the harness printed just above it (above its title, else its header; at most
  :data:`CONFIG_REACH` lines above, after the previous table's last row): a line of ``key=value``
  pairs only, bare or in brackets, after ``#``/``###`` or ``config:``
  (``causal=True``, ``[causal=True]``, ``### causal=False, headdim=64 ###``, ``config: BLOCK_M=128``),
  its name then ``<title> [causal=True]``, where no earlier table of the title printed the same;
- else by its ordinal among the tables of that title the process printed: ``<title> #2``.

The first table of a title keeps the title as printed. The counting is per process (one reading of one
output; a raw log of repeated runs is read run by run: engine/runs_log.py), so the second table of run 3
pairs with the second table of run 1. The engine and ``gpuverify check`` read a log with the same code,
so both name the same tables.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pytest_gpuverify.parsers.reading.columns import Table

CONFIG_REACH = 3  # lines above a table's first line that a settings line may stand
CONFIG_CAP = 120  # characters of a settings line kept in a table's name
_PAIR = r"[A-Za-z_][\w.\-]*=[^\s,;\[\]()#\x1c-\x1f]+"
CONFIG_LINE = re.compile(
    r"^[ \t]*[\[(#*\-]*[ \t]*(?:[Cc]onfig(?:uration)?[ \t]*[:=][ \t]*)?"
    rf"(?P<body>{_PAIR}(?:[ \t,;]+{_PAIR})*)[ \t,;]*[\])#*\-]*[ \t]*$",
    re.ASCII,
)
# The triggers of a settings line, as the prefilter reads a line (parsers/reading/fold.py): the folded
# chunk (``=`` as ``:``, lower case, tabs as spaces, a Unicode space that ``str.strip`` drops as
# ``\x80``) and Hyperscan's; each a superset of the above, and the whole line, so that a log line with a
# ``key=value`` in it (``[pid=42 pname=Main] start build``) is no candidate.
_FOLDED_PAIR = rb"[a-z_][a-z0-9_.\-]*:[^ \n,;\[\]()#]+"
TRIGGER = (
    rb"[ \x80]*[\[(#*\-]*[ ]*(?:config[a-z]*[ ]*:[ ]*)?"
    + _FOLDED_PAIR
    + rb"(?:[ ,;]+"
    + _FOLDED_PAIR
    + rb")*[ ,;]*[\])#*\-]*[ \x80]*\n"
)


def hs_trigger(spu: bytes, sp: bytes) -> bytes:
    """:data:`TRIGGER` for Hyperscan (``spu``: a space or a non-ASCII byte; ``sp``: an ASCII space)."""
    pair = rb"[a-z_][a-z0-9_.\-]*=[^" + sp[1:-1] + rb"\n,;\[\]()#]+"
    return (
        spu
        + rb"*[\[(#*\-]*"
        + sp
        + rb"*(?:config[a-z]*"
        + sp
        + rb"*[:=]"
        + sp
        + rb"*)?"
        + pair
        + rb"(?:["
        + sp[1:-1]
        + rb",;]+"
        + pair
        + rb")*["
        + sp[1:-1]
        + rb",;]*[\])#*\-]*"
        + spu
        + rb"*$"
    )


def config_of(text: str) -> str | None:
    """The settings a line prints (``causal=True, d=64``), or None when it is not a line of settings."""
    if "=" not in text:
        return None
    found = CONFIG_LINE.match(text)
    return found["body"].strip()[:CONFIG_CAP] if found else None


def top_line(table: Table) -> int:
    """The first line printed of a table: its title's, where it has one just above its header."""
    return table.header_line - 1 if table.title else table.header_line


def settings_above(table: Table, config: tuple[int, str] | None, last_row_line: int) -> str | None:
    """The settings line ``config`` (lineno, settings) where it stands just above ``table`` and after
    the last row of any table before it."""
    if config is None:
        return None
    lineno, settings = config
    top = top_line(table)
    return settings if last_row_line < lineno < top and top - lineno <= CONFIG_REACH else None


def name_repeats(tables: Iterable[Table]) -> None:
    """Rename the rows of each table that repeats a key of an earlier table of its title, in one
    process's output (``tables``: in the order they were read; a table read as two, one printed
    table: joined by their header line)."""
    printed: dict[int, list[Table]] = {}
    for table in tables:
        printed.setdefault(table.header_line, []).append(table)
    seen: dict[str | None, list[tuple[str | None, set[tuple]]]] = {}  # title -> (settings, keys) of each
    for line in sorted(printed):
        parts = printed[line]
        title, config = parts[0].title, next((t.config for t in parts if t.config), None)
        rows = [row for t in parts for row in t.perf]
        keys = {(row.shape, row.name, row.stat, row.side) for row in rows}
        earlier = seen.setdefault(title, [])
        repeats = any(keys & before for _, before in earlier)
        earlier.append((config, keys))
        if not repeats:
            continue
        if config is not None and all(config != other for other, _ in earlier[:-1]):
            name = f"{title} [{config}]" if title else f"[{config}]"
        else:
            name = f"{title} #{len(earlier)}" if title else f"#{len(earlier)}"
        for row in rows:
            row.table = name
