"""Each parser's :class:`.prefilter.Triggers`: where, in a folded chunk, the lines it reads may be.

A trigger must match every line the parser would do anything with when no table or dump is open
(:mod:`.prefilter` hands over every line while one is); matching more costs only time. Each is
derived below from what the parser's code tests, as the parser sees a line: ANSI escapes removed
(done by the prefilter), and, for a line start, after the prefixes the parser drops (a CI
timestamp, aiter's ``[aiter ...]`` logger prefix).

They run over the chunk translated by :data:`FOLD`: upper case as lower case (the ``re.I``
patterns; matching a case-sensitive word in any case only adds candidates), ``=`` as ``:`` (one
pass reads both ``name: value`` and ``name=value``), every ASCII character Python's ``\\s``
matches except the newline as a space, and every non-ASCII byte as ``\\x80``. A non-ASCII
character may be Unicode whitespace, a Unicode digit, or one of the four that ``re.I`` matches to
an ASCII letter (``ſ`` s, ``İ``/``ı`` i, ``K`` k), so wherever a trigger reads a letter, a digit
or a space, ``\\x80`` must be read as a possible one; a chunk without non-ASCII bytes gets the
variant without those rules.

Python's ``re`` scans fast only for one literal byte, and is slow at each stop once the test there
has alternatives that do not start with a literal (a look-behind, say): one alternation of words
over a chunk runs at under 50 MB/s. So each expression stops at one byte (``:`` or a newline) and
tests a fixed window around it, cheapest and most selective test first.
"""

from __future__ import annotations

import re
from typing import Callable

from .prefilter import Passes, Triggers

_ASCII_SPACE = b"\t\x0b\x0c\r\x1c\x1d\x1e\x1f"  # besides " ": what str's \s matches below 0x80, but "\n"
FOLD = bytes.maketrans(
    bytes(range(65, 91)) + b"=" + _ASCII_SPACE + bytes(range(128, 256)),
    bytes(range(97, 123)) + b":" + b" " * len(_ASCII_SPACE) + b"\x80" * 128,
)


# The last three characters of every name metrics.py reads, before the ``:`` (or before the spaces
# in front of it): cos, cosine, sim, similarity, diff (logits/cos/max diff), abs, absolute, err,
# error, difference, snr, (snr_)db / db) (SNR (dB)), delta (aiter's ``-->max abs delta``), and avg
# (``torch avg: 1.2 us``). "db" is two: any character may come before it.
NAME_ENDS = (b"cos", b"ine", b"sim", b"ity", b"iff", b"abs", b"ute", b"err", b"ror", b"nce", b"snr", b"db)", b"lta",
             b"avg", b"db")


def key_value(ascii_only: bool, ends: tuple[bytes, ...] = NAME_ENDS, after: bytes = b"") -> bytes:
    """A ``:`` (or ``=``) the parser may read: after a name ending in ``ends`` (up to two spaces
    between; three spaces or more are taken as a name's) and before a number; after ``atol`` (a
    ``[checkAllclose atol=`` check) or ``AssertionError``; at the end of a line (a title); before
    ``<number> us``, whatever the name (a ``[perf] name: 1.2 us`` timing); and before ``after``
    (more alternatives, each starting with a literal).
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
        b"|\n|[ ]++(?:\n|" + timing + unicode_end + b")|" + timing + unicode_end
        + (b"|" + after if after else b"") + b")"
    )


def picker(line: Callable[[bool], bytes], next_line: bytes) -> Callable[[bytes, int, int], Passes]:
    """Compile ``line(ascii_only)`` both ways; a chunk with no non-ASCII byte gets the ASCII one."""
    nl = re.compile(next_line)
    variants = {a: ((re.compile(line(a)),), (nl,)) for a in (False, True)}

    def pick(folded: bytes, start: int, end: int) -> Passes:
        return variants[folded.isascii()]

    return pick


# ----- aiter op_tests (aiter.py) ----------------------------------------------------------------
#
# With no table or tensor dump open, _AiterParser.feed does something with a line only when
#   metrics.py reads a measure: a name, ``:``/``=``, a number                  -> key_value
#   a ``[checkAllclose atol=...`` check (its ``atol=``)                       -> key_value
#   ``-->max abs delta: nan`` (a name, ``:``, a nan/inf)                      -> key_value
#   ``AssertionError: ... catastrophic error``                                -> key_value
#   a timing: ``who avg: X us``, or ``name: X us`` on a ``[perf]`` line       -> key_value
#   a ``... summary:`` title (the line ends with ``:``)                        -> key_value
#   the text starts with ``|`` (a markdown header), ``calling <name>(`` (a call block), or with
#   a digit and holds `` ...`` (pandas rows with elided columns and no header), once the CI
#   timestamp and the ``[aiter ...]`` prefix are dropped                     -> _AITER_LINE_START
_ORPHAN_ROW = rb"[\d\x80][^\n]*[ \x80]\.\.\."  # a digit (maybe a Unicode one), later " ..."
_LINE_START = (rb"\|", b"calling ", _ORPHAN_ROW)
_LOGGER = rb"\[aiter[^\]\n]*+\] ?+"
# 2026-01-02T03:04:05.1234567Z (Python's \d also matches Unicode digits)
_CI = rb"[\d\x80][\d\x80]*+-[\d\x80]++-[\d\x80]++t[\d:.\x80]++z "


def _either(*alternatives: bytes) -> bytes:
    """One alternation, flat: ``re`` passes over an alternative that starts with a literal or a
    class not matching at a glance, and enters every other one (a nested group, say)."""
    return b"(?:" + b"|".join(alternatives) + b")"


_AITER_LINE_START = b"\n" + _either(
    *_LINE_START, _LOGGER + _either(*_LINE_START), _CI + b"(?:" + _LOGGER + b")?+" + _either(*_LINE_START)
)

AITER = Triggers(FOLD, picker(key_value, _AITER_LINE_START))


# ----- an inner pytest run (pytest_run.py: the Triton tests; FlyDSL adds its own lines) --------
#
# PytestTerminal.feed reads, once ANSI codes and the CI timestamp are dropped, lines starting with
# ``===`` (sections, banners, the summary), ``___`` (a test's section), ``---`` (captured output),
# ``E`` alone or before a space or tab (exception lines), ``PASSED ``/``FAILED ``/``ERROR ``/
# ``XFAIL ``/``XPASS ``/``SKIPPED [`` (the short summary), a digit (or ``no tests ran``) with `` in ``
# (the summary line), and lines holding ``::`` (``-v`` outcomes; ``==`` folds to ``::`` too);
# any other line it hands to metrics.py (key_value) and to the subclass. (A line-start expression
# must not take the newline that ends its line: the next line's test starts there.)
_PYTEST_START = (b"===", b"___", b"---", rb"e(?: |(?=\n))", b"passed ", b"failed ", b"error ", b"xfail ", b"xpass ",
                 rb"skipped \[", b"no tests ran in ", rb"[\d\x80][^\n]* in ")
_PYTEST_LINE_START = b"\n" + _either(*_PYTEST_START, _CI + _either(*_PYTEST_START))
PYTEST = Triggers(FOLD, picker(lambda a: key_value(a, after=b":"), _PYTEST_LINE_START))


# ----- bench.py's TableReader (in the bench and FlyDSL parsers) -----------------------------------
#
# With no table open, TableReader._detect reads (the line stripped): a ``<plot name>:`` title (the
# line ends with ``:`` -> key_value), ``=== Benchmark: current vs X ===``, a ``[N rows x M columns]``
# footer, and a header: three names or more between runs of two spaces or more, one naming a unit.
# _TABLE_HEADER finds a run of two spaces with a name before it, a name after, and after that one
# more such run: every line split into three names has it when its runs are ASCII; with non-ASCII
# bytes (Unicode spaces) one internal run is enough.
_TABLE_START = (b"===", rb"\[[\d\x80]", rb"[ \x80]+(?:===|\[[\d\x80])")  # str.strip drops leading spaces
_TABLE_HEADER = {
    True: rb"  (?<=[^ \n]  ) *+[^ \n][^\n]*  [^ \n]",
    False: rb"  (?<=[^ \n]  )[ \x80]*[^ \n]",
}


# ----- FlyDSL tests (flydsl.py): the pytest terminal, the tables, and its own lines ----------------
#
# FlydslParser.on_line reads, besides the pytest terminal's lines and the tables: ``Throughput: X
# us`` and ``[Perf] who: X us`` (timings), ``Kernel avg time: X ms``, ``Bandwidth: X GB/s``,
# ``TFLOPS=``/``TB/s=``/``GB/s=``/``us_p50=`` values (names ending ime, dth, ops, b/s, p50),
# ``(atol=`` -> key_value; lines starting (spaces aside) ``FlyDSL MoE``, ``Testing ``, ``FAILED``
# alone, ``N TESTS FAILED`` -> _FLYDSL_LINE_START; ``Check passed``/``Check failed`` and
# ``| PASS |``/``| FAIL |`` anywhere -> _FLYDSL_ANYWHERE.
FLYDSL_NAME_ENDS = NAME_ENDS + (b"ime", b"dth", b"ops", b"b/s", b"p50")
_FLYDSL_OWN = (b"flydsl moe", b"testing ", rb"failed[ \x80]*+(?=\n)", rb"[\d\x80]++ tests? failed")
_FLYDSL_START = (*_PYTEST_START, *_FLYDSL_OWN, rb"[ \x80]+" + _either(*_FLYDSL_OWN), *_TABLE_START)
_FLYDSL_LINE_START = b"\n" + _either(*_FLYDSL_START, _CI + _either(*_FLYDSL_START))
_FLYDSL_ANYWHERE = (re.compile(rb"check (?:passed|failed)"), re.compile(rb"\| (?:pass|fail) \|"))


def _flydsl_pick() -> Callable[[bytes, int, int], Passes]:
    nl = re.compile(_FLYDSL_LINE_START)
    line = {a: re.compile(key_value(a, FLYDSL_NAME_ENDS, after=b":")) for a in (False, True)}
    variants = {a: ((line[a], re.compile(_TABLE_HEADER[a]), *_FLYDSL_ANYWHERE), (nl,)) for a in (False, True)}
    return lambda folded, start, end: variants[folded.isascii()]


FLYDSL = Triggers(FOLD, _flydsl_pick())


# ----- bench harnesses (bench.py): aiter's lines and the tables -----------------------------------
#
# _BenchParser drops ANSI codes, the CI timestamp and a side prefix (``[A] ``, ``B: ``, ``[base] ``),
# then hands the text to the aiter parser (which drops the same again, and ``[aiter ...]``) and to
# the TableReader. (A \x80 after a side prefix may be a Unicode digit's: the spaces may give it back.)
_BENCH_AFTER_SIDE = (
    *_TABLE_START, *_LINE_START, _LOGGER + _either(*_LINE_START),
    _CI + b"(?:" + _LOGGER + b")?+" + _either(*_LINE_START),
)
_SIDES = (rb"\[(?:[ab]|base|head)\][ \x80]+", rb"[ab]:[ \x80]+")
_BENCH_LINE_START = b"\n" + _either(
    *_BENCH_AFTER_SIDE, *(side + _either(*_BENCH_AFTER_SIDE) for side in _SIDES),
    _CI + b"(?:" + b"|".join(_SIDES) + b")?" + _either(*_BENCH_AFTER_SIDE),
)


def _bench_pick() -> Callable[[bytes, int, int], Passes]:
    nl = re.compile(_BENCH_LINE_START)
    variants = {a: ((re.compile(key_value(a)), re.compile(_TABLE_HEADER[a])), (nl,)) for a in (False, True)}
    return lambda folded, start, end: variants[folded.isascii()]


BENCH = Triggers(FOLD, _bench_pick())
