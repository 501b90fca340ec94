"""Where a recognizer's lines may be: :class:`TriggerSpec`, and the pieces every spec is written with.

The reader hands a recognizer only the lines some trigger of the kind's recognizers finds (and every
line while one of them has a table or a dump open: :mod:`.prefilter`). A recognizer's spec must
find every line it does anything with when nothing is open; finding more costs only time. Each is
written from what the recognizer's code tests, as the recognizer sees a line: ANSI escapes removed
(done by the prefilter), and, for a line start, after the prefixes the reader drops (a CI
timestamp, an A/B side, aiter's ``[aiter ...]`` logger prefix: :mod:`.line`).

A spec has two spellings of the same triggers. The ``re`` one runs over the chunk translated by
:data:`FOLD`: upper case as lower case (matching a case-sensitive word in any case only adds
candidates), ``=`` as ``:`` (one pass reads both ``name: value`` and ``name=value``), every ASCII
character Python's ``\\s`` matches except the newline as a space, and every non-ASCII byte as
``\\x80``. A non-ASCII character may be Unicode whitespace, a Unicode digit, or one of the four that
``re.I`` matches to an ASCII letter (``ſ`` s, ``İ``/``ı`` i, ``K`` k), so wherever a trigger reads a
letter, a digit or a space, ``\\x80`` must be read as a possible one; a chunk without non-ASCII
bytes gets the variant without those rules. Python's ``re`` scans fast only for one literal byte,
so each expression starts with a literal and tests a fixed window around it.

The Hyperscan one (:mod:`.hsscan`, the fast engine) is plain expressions over the unfolded chunk,
matched caseless, the fold spelt out in classes (:class:`Spelling`: ``sp`` a space, ``[:=]`` a
``:``, ``u`` a non-ASCII byte), ``^`` a line start. The tests hold both engines to the recognizers
line by line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pytest_gpuverify.parsers.reading.hsscan import PatternSet
from pytest_gpuverify.parsers.reading.prefilter import Passes, Triggers

_ASCII_SPACE = b"\t\x0b\x0c\r\x1c\x1d\x1e\x1f"  # besides " ": what str's \s matches below 0x80, but "\n"
FOLD = bytes.maketrans(
    bytes(range(65, 91)) + b"=" + _ASCII_SPACE + bytes(range(128, 256)),
    bytes(range(97, 123)) + b":" + b" " * len(_ASCII_SPACE) + b"\x80" * 128,
)


# Hyperscan pieces: what FOLD makes of a byte, spelt as a class. A chunk of ASCII bytes gets the
# patterns without the non-ASCII rules (``Spelling(ascii=True)``): the same lines, found faster.
_SP = rb" \t\x0b\x0c\r\x1c-\x1f"  # FOLD's " ": a space, and every other ASCII \s but the newline
_U = rb"\x80-\xff"  # FOLD's "\x80"


class Spelling:
    def __init__(self, ascii: bool) -> None:
        u = b"" if ascii else _U
        self.ascii = ascii
        self.sp = b"[" + _SP + b"]"
        self.spu = b"[" + _SP + u + b"]"  # [ \x80]
        self.ns = b"[^" + _SP + b"\n]"  # [^ \n]
        self.digit = b"[0-9" + u + b"]"  # [\d\x80]
        self.number = b"[-+.0-9ni" + u + b"]"  # a number starts (as in key_value)
        self.u = b"[" + _U + b"]"

    def words(self, text: bytes) -> bytes:
        """A literal, its spaces read as FOLD reads them (letters are caseless already)."""
        return re.escape(text).replace(b"\\ ", b" ").replace(b" ", self.sp)

    def ci(self) -> bytes:
        """The end of a CI timestamp (``...Z ``): a superset of :data:`CI`, which Hyperscan checks faster."""
        return b"z" + self.sp


def hs_any(*alternatives: bytes) -> bytes:
    return b"(?:" + b"|".join(alternatives) + b")"


def either(*alternatives: bytes) -> bytes:
    """One alternation, flat: ``re`` passes over an alternative that starts with a literal or a
    class not matching at a glance, and enters every other one (a nested group, say)."""
    return b"(?:" + b"|".join(alternatives) + b")"


# The last three characters of every name a figure is read under before the ``:`` (or before the
# spaces in front of it): cos, cosine, sim, similarity, diff (logits/cos/max diff), abs, absolute,
# err, error, difference, snr, (snr_)db / db) (SNR (dB)), delta (aiter's ``-->max abs delta``), avg
# (``torch avg: 1.2 us``: measures.py, aiter_checks.py); time, bandwidth, TFLOPS, TB/s, p50 (FlyDSL's
# one-liners: flydsl.py). "db" is two: any character may come before it. One spelling for every
# recognizer that reads ``name: number``: the ``re`` engine makes one pass for it, not one each.
NAME_ENDS = (
    b"cos",
    b"ine",
    b"sim",
    b"ity",
    b"iff",
    b"abs",
    b"ute",
    b"err",
    b"ror",
    b"nce",
    b"snr",
    b"db)",
    b"lta",
    b"avg",
    b"db",
    b"ime",
    b"dth",
    b"ops",
    b"b/s",
    b"p50",
)
HS_COLONS = b"[:=][:=]"  # ``::`` of a pytest -v outcome, ``==`` of a banner (``after`` below)


def key_value(ascii_only: bool, ends: tuple[bytes, ...] = NAME_ENDS, after: bytes = b":") -> bytes:
    """A ``:`` (or ``=``) a recognizer may read: after a name ending in ``ends`` (up to two spaces
    between; three spaces or more are taken as a name's) and before a number; after ``atol`` (a
    ``[checkAllclose atol=`` check) or ``AssertionError``; at the end of a line (a title); before
    ``<number> us``, whatever the name (a ``[perf] name: 1.2 us`` timing); and before ``after``
    (more alternatives, each starting with a literal; by default a second ``:``: pytest's ``::``).
    """
    u = b"" if ascii_only else b"\x80"
    space = b"[ " + u + b"]"
    names = b"|".join(re.escape(e) if len(e) == 3 else b"(?s:.)" + re.escape(e) for e in ends)
    if not ascii_only:
        names += b"|\x80..|.\x80.|..\x80"  # a name spelt with a non-ASCII letter, or Unicode spaces
    before = bytes(sorted({e[-2] for e in ends} | set(b"o")))  # o: atol, assertionerror
    last = bytes(sorted({e[-1] for e in ends} | set(b"lr")))
    number = b"[-+.\\dni" + u + b"]"  # a number starts: sign, digit, dot, n(an), i(nf)
    timing = number + b"[-+. \\dnaife" + u + b"]*+u[s" + u + b"]"  # the number's characters, spaces, us
    unicode_end = b"|\\x80[ \\x80]*+\\n" if u else b""  # Unicode spaces, then the line ends
    return (
        b":(?:"
        # the two characters before the ':' may end a name: test the names
        b"(?<=[" + re.escape(before) + u + b"][" + re.escape(last) + u + b"]:)"
        b"(?:(?<=atol:)|(?<=assertionerror:)|(?=[ ]*+" + number + b")(?<=(?:" + names + b"):))"
        # spaces before the ':'
        b"|(?<=" + space + b":)(?=[ ]*+" + number + b")"
        b"(?:(?<=(?:" + names + b")" + space + b":)|(?<=(?:" + names + b")" + space * 2 + b":)"
        b"|(?<=" + space * 3 + b":))"
        # the line ends, or a timing follows (alternatives that start with a literal are cheap)
        b"|\n|[ ]++(?:\n|"
        + timing
        + unicode_end
        + b")|"
        + timing
        + unicode_end
        + (b"|" + after if after else b"")
        + b")"
    )


def hs_key_value(
    k: Spelling, ends: tuple[bytes, ...] = NAME_ENDS, after: tuple[bytes, ...] = (HS_COLONS,)
) -> list[bytes]:
    """:func:`key_value` as Hyperscan patterns: a name end, up to two spaces, ``:``, a number;
    three spaces, ``:``, a number; ``atol:``/``assertionerror:``; a ``:`` ending its line; a
    ``: <number> us`` timing; ``after`` (whole patterns); and, with non-ASCII bytes, a name spelt
    with one (a non-ASCII byte up to five bytes before the ``:``)."""
    names = hs_any(*(re.escape(e) for e in ends))
    timing = b"[-+.0-9naife" + _SP + (b"" if k.ascii else _U) + b"]*u[s" + (b"" if k.ascii else _U) + b"]"
    patterns = [
        names + k.spu + b"{0,2}[:=]" + k.sp + b"*" + k.number,
        k.spu + b"{3}[:=]" + k.sp + b"*" + k.number,
        b"(?:atol|assertionerror)[:=]",
        b"[:=]" + k.spu + b"*$",
        b"[:=]" + k.sp + b"*" + k.number + timing,
        *after,
    ]
    if not k.ascii:
        patterns.append(k.u + rb"[^\n]{0,4}[:=]" + k.sp + b"*" + k.number)
    return patterns


# The prefixes the reader drops before a line start is tested (line.py), as the folded chunk shows
# them: a CI timestamp (2026-01-02T03:04:05.1234567Z; Python's \d also matches Unicode digits), an
# A/B side (``[A] ``, ``b: ``, ``[base] ``; a \x80 after it may be a Unicode space), aiter's logger.
CI = rb"[\d\x80][\d\x80]*+-[\d\x80]++-[\d\x80]++t[\d:.\x80]++z "
SIDES = (rb"\[(?:[ab]|base|head)\][ \x80]+", rb"[ab]:[ \x80]+")
LOGGER = rb"\[aiter[^\]\n]*+\] ?+"


def _prefixed_line_start(starts: Sequence[bytes]) -> bytes:
    """A ``\\n`` and one of ``starts``, after any of the prefixes the reader drops, in its order."""
    alts = either(*starts)
    side = either(*SIDES)
    return (
        b"\n(?:"
        + b"|".join(
            [
                alts,
                LOGGER + alts,
                side + b"(?:" + LOGGER + b")?+" + alts,
                CI + b"(?:" + side + b")?+(?:" + LOGGER + b")?+" + alts,
            ]
        )
        + b")"
    )


def _hs_prefixed_line_start(k: Spelling, starts: Sequence[bytes]) -> bytes:
    """The same for Hyperscan: at a line start, after a logger's or side's ``]``, a side's ``:``, or a
    CI timestamp's ``Z ``: a superset that Hyperscan finds faster."""
    before = hs_any(b"^", rb"\]" + k.spu + b"*", b"^[ab][:=]" + k.spu + b"+", k.ci())
    return before + hs_any(*starts)


@dataclass(frozen=True)
class TriggerSpec:
    """Where one recognizer's lines may be (see the module's docstring for the spellings).

    ``line(ascii_only)``: ``re`` expressions over the folded chunk, a match anywhere making its line a
    candidate; ``line_start``: alternatives tested at a line's start, after the reader's prefixes;
    ``raw``: ``re`` expressions over the unfolded chunk where it holds non-ASCII bytes (marks,
    box-drawing bars); ``cased``: ``re`` expressions over the unfolded chunk, matched with their case;
    ``hs(spelling)``: the same triggers as Hyperscan patterns, less the line starts;
    ``hs_line_start(spelling)``: the line starts as Hyperscan alternatives.
    """

    line: Callable[[bool], Sequence[bytes]] = lambda ascii_only: ()
    line_start: Sequence[bytes] = ()
    raw: Sequence[bytes] = ()
    cased: Sequence[bytes] = ()
    hs: Callable[[Spelling], Sequence[bytes]] = lambda k: ()
    hs_line_start: Callable[[Spelling], Sequence[bytes]] = lambda k: ()
    name: str = field(default="", compare=False)


def compose(specs: Sequence[TriggerSpec]) -> Triggers:
    """One :class:`.prefilter.Triggers` that finds every line any of ``specs`` finds."""
    starts = [s for spec in specs for s in spec.line_start]
    variants: dict[bool, Passes] = {}  # compiled on first use: the Hyperscan engine needs none of them

    def pick(folded: bytes, start: int, end: int) -> Passes:
        ascii_only = folded.isascii()
        if ascii_only not in variants:
            line_start = (re.compile(_prefixed_line_start(starts)),) if starts else ()
            line = dict.fromkeys(p for spec in specs for p in spec.line(ascii_only))  # one pass for a shared one
            variants[ascii_only] = (tuple(re.compile(p) for p in line), line_start)
        return variants[ascii_only]

    def hs_patterns(ascii_only: bool) -> list[bytes]:
        k = Spelling(ascii_only)
        found = list(dict.fromkeys(p for spec in specs for p in spec.hs(k)))
        hs_starts = [s for spec in specs for s in spec.hs_line_start(k)]
        if hs_starts:
            found.append(_hs_prefixed_line_start(k, hs_starts))
        return found

    raw = tuple(re.compile(p) for spec in specs for p in spec.raw)
    cased = tuple(re.compile(p) for spec in specs for p in spec.cased)
    return Triggers(FOLD, pick, PatternSet(hs_patterns), raw, cased)
