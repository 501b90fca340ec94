"""Where a printed table may start, for the prefilter (parsers/reading/prefilter.py): the byte patterns of
the tables recognizer (tables.py), folded (``re``) and for Hyperscan. A line they find is read by the
recognizer; a line they miss never reaches it, so each layout it reads has a pattern here."""

from __future__ import annotations

from pytest_gpuverify.parsers.reading.fold import TriggerSpec
from pytest_gpuverify.parsers.recognizers.table_names import TRIGGER as CONFIG_TRIGGER
from pytest_gpuverify.parsers.recognizers.table_names import hs_trigger

# Where a table may start: a title (a line ending with ``:``), a heading (``Operator: ...``), a bar
# (``|``; the box-drawing ``│``/``┃``/``║`` are non-ASCII: read in the unfolded chunk), a rule, a header
# of three names or more two spaces apart (two runs of two spaces), comma-separated names, a pandas
# footer, rows with elided columns and no header.
# (a header's names are two ASCII spaces apart: reading/tables.split_names)
_HEADER = rb"  (?<=[^ \n]  ) *+[^ \n][^\n]*  [^ \n]"
_BOX_BARS = rb"\xe2\x94[\x82\x83]|\xe2\x95\x91"
_CSV = rb",[a-z_(\[\-][^,\n]*,"
_STARTS = (
    rb"\|",
    rb"\+-",
    b"---",
    b":::",
    rb"[ \x80]*\[[\d\x80]",
    rb"[\d\x80][^\n]*[ \x80]\.\.\.",
    rb"[ \x80]+\|",
    rb"[ \x80]*(?:#|operator|kernel|benchmark|bench|table|performance)",  # (``=`` folds to ``:``)
    CONFIG_TRIGGER,
)  # a line of settings (``causal=True``) that may name the table under it
# a header of two names whose columns are worth a table: ``m    err``, ``x_val   triton-accuracy``
_CHECK_NAMES = (
    rb"err(?=[ _(|)\n\x80])(?<=[\n _:|(\x80\-]err)",
    b"accura",
    b"valid",
    b"correct",
    b"verif",
    b"flops",
    b"b/s",
    b"latency",
    rb"\((?:us|ms)\)",
)


def _hs_header(k) -> list[bytes]:
    # (ending at the line's end, a header-like line is reported once, not at each of its columns)
    return [rb"[^ \t\n][ \t]{2,}[^ \t\n][^\n]*[ \t]{2}[^ \t\n][^\n]*$"]


TRIGGERS = TriggerSpec(
    line=lambda ascii_only: (rb":[ \x80]*\n", rb"\|", _HEADER, _CSV, *_CHECK_NAMES),
    raw=(_BOX_BARS,),
    line_start=_STARTS,
    # (a row's first bar only: one report a row, not one a column)
    hs=lambda k: (
        b"[:=]" + k.spu + b"*$",
        rb"^[^\n|]*\|",
        _BOX_BARS,
        *_hs_header(k),
        _CSV,
        rb"(?:^|[\s_:|(\x80-\xff\-])err(?:$|[\s_(|)\x80-\xff])",
        b"accura",
        b"valid",
        b"correct",
        b"verif",
        b"flops",
        b"b/s",
        b"latency",
        rb"\((?:us|ms)\)",
    ),
    hs_line_start=lambda k: (
        rb"\|",
        rb"\+-",
        b"---",
        b"[:=]{3}",
        k.spu + rb"*\[" + k.digit,
        k.digit + rb"[^\n]*" + k.spu + rb"\.\.\.",
        k.spu + rb"+\|",
        k.spu + b"*(?:#|operator|kernel|benchmark|bench|table|performance)",
        hs_trigger(k.spu, k.sp),
    ),
    name="tables",
)
