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

Each section also gives the same triggers as Hyperscan patterns (:mod:`.hsscan`, the fast engine):
plain expressions over the unfolded chunk, matched caseless, so the fold is spelt out in classes
(:data:`SP` a space, ``[:=]`` a ``:``, :data:`U` a non-ASCII byte), and ``^`` is a line start.
The tests hold both engines to the parsers line by line.
"""

from __future__ import annotations

import re
from typing import Callable

from pytest_gpuverify.parsers.hsscan import PatternSet
from pytest_gpuverify.parsers.prefilter import Passes, Triggers

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
        """The end of a CI timestamp (``...Z ``): a superset of _CI, which Hyperscan checks faster."""
        return b"z" + self.sp


def hs_any(*alternatives: bytes) -> bytes:
    return b"(?:" + b"|".join(alternatives) + b")"


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


def hs_key_value(k: Spelling, ends: tuple[bytes, ...] = NAME_ENDS, after: tuple[bytes, ...] = ()) -> list[bytes]:
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


# ----- words read anywhere in a line: the alarms (alarms.py, every kind) and aiter's tables (ruled.py) --
#
# Error lines and tracebacks (``error``, ``Exception``, ``Traceback``, ``Memory access fault``,
# ``illegal memory access``, ``core dumped``, ``Aborted``), a ``failed`` word, a ``[checkAllclose``
# line whatever it holds, a column named ``err`` (a tabulate ``simple`` header), and a table's bar
# (``|``; the box-drawing ``│``/``┃``/``║`` are non-ASCII: BOX_BARS reads the unfolded chunk).
# Each alarm expression in alarms.py holds one of these words, in ASCII.
ALARM_WORDS = (b"exception", b"traceback", b"fault", b"illegal", b"dumped", b"aborted", b"fail", b"fatal",
               b"checkallclose", rb"\|")
# ``error`` before a ``:`` or the line's end, or after hip/cuda/hsa; ``err`` as a column name's word
_ERROR_RE = (
    rb"error(?:[ \x80]*+[:\n]|(?<=hiperror)|(?<=cudaerror)|(?<=hsaerror)"
    rb"|(?<=[ _]error)(?:(?<=hip.error)|(?<=cuda.error)|(?<=hsa.error)))",
    rb"err(?=[ _(|)\n\x80])(?<=[\n _:|(\x80]err)",
)
HS_ERROR = (
    rb"error[ \t\x0b\x0c\r\x1c-\x1f\x80-\xff]*(?:[:=]|$)", rb"(?:hip|cuda|hsa)[ _]?error",
    rb"(?:^|[\s_:=|(\x80-\xff])err(?:$|[\s_(|)\x80-\xff])",
)
BOX_BARS = rb"\xe2\x94[\x82\x83]|\xe2\x95\x91"

# ----- every kind: the printout's scan (printout.py) -------------------------------------------------
#
# Printout.feed reads, besides the alarm words above (error lines, tracebacks, ``failed`` words,
# pytest's ``Pytest...ExceptionWarning``): verdict lines (a ``pass``/``fail``/``correct`` word; the
# words an ``ok`` may follow: ``accura``, ``verif``, ``valid``, ``numeric``; ``allclose``/``all_close``;
# a check mark: ``✅ ✓ ✔ ☑ ❌ ✗ ✘ ✖ ❎`` are non-ASCII, MARKS reads the unfolded chunk), assert_close
# blocks (``are not close``/``are not equal``, ``mismatched elements``, ``greatest ... difference``),
# metrics.py's ``maximum difference between a and b is X`` (no ``:``), and the pytest parser's first
# error line (``ImportError while loading conftest``). Its regular expressions are ASCII ones
# (``re.A``): ``ſ`` is no ``s`` there.
PRINTOUT_WORDS = (b"pass", b"correct", b"accura", b"verif", b"valid", b"numeric", b"all[_ ]?close",
                  b"are not (?:close|equal)", b"mismatched elements", b"greatest", b"between", b"(?:error|exception) while")
MARKS = rb"\xe2\x9c[\x85\x93\x94\x96\x97\x98]|\xe2\x9d[\x8c\x8e]|\xe2\x98\x91"
_PRINTOUT_RE = tuple(re.compile(word) for word in ALARM_WORDS + _ERROR_RE + PRINTOUT_WORDS)
PRINTOUT_RAW = (re.compile(BOX_BARS), re.compile(MARKS))


def hs_printout(k: Spelling) -> list[bytes]:
    words = [b"all[_ ]?close", k.words(b"are not ") + b"(?:close|equal)", k.words(b"mismatched elements"),
             b"(?:error|exception)" + k.sp + b"while"]
    return [*ALARM_WORDS, *HS_ERROR, BOX_BARS, MARKS, b"pass", b"correct", b"accura", b"verif", b"valid", b"numeric",
            b"greatest", b"between", *words]


def with_printout(pick: Callable[[bytes, int, int], Passes]) -> Callable[[bytes, int, int], Passes]:
    """``pick`` with the printout's triggers (and the result triggers below) added to its line patterns."""
    def picked(folded: bytes, start: int, end: int) -> Passes:
        line, next_line = pick(folded, start, end)
        return (*line, *_PRINTOUT_RE, *_RESULT[folded.isascii()]), next_line

    return picked


def kind_patterns(own: Callable[[Spelling], list[bytes]]) -> PatternSet:
    """A kind's Hyperscan patterns: its own, the printout's and the result triggers."""
    return PatternSet(lambda ascii: [*own(Spelling(ascii)), *hs_printout(Spelling(ascii)), *hs_result(Spelling(ascii))])


def picker(line: Callable[[bool], bytes], next_line: bytes) -> Callable[[bytes, int, int], Passes]:
    """Compile ``line(ascii_only)`` both ways; a chunk with no non-ASCII byte gets the ASCII one."""
    nl = re.compile(next_line)
    variants = {a: ((re.compile(line(a)),), (nl,)) for a in (False, True)}

    def pick(folded: bytes, start: int, end: int) -> Passes:
        return variants[folded.isascii()]

    return pick


# ----- every parser: NaN in a printed result (shape_checks.py) ------------------------------------
#
# PrintedChecks reads, besides what each parser reads, a line holding ``tensor(`` (a printed tensor,
# bare or after a label) or a ``:``/``=`` before ``nan``/``inf`` (``output: nan``), spaces between.
# (``re.I`` reads a dotless or dotted I as ``i``: two non-ASCII bytes before ``nf`` may be ``inf``.)
# Each starts with one literal (``re`` scans fast only for that), and checks the byte before it: a
# ``:`` (an ``=``), a space, a sign; the parser reads ``nan``/``inf`` only right after a label.
_TENSOR = re.compile(rb"tensor\(")
_NAN = re.compile(rb"nan(?<=[: \x80+\-]nan)(?![a-z0-9_])")
_INF = re.compile(rb"inf(?<=[: \x80+\-]inf)(?![a-z0-9_])")
_RESULT = {True: (_TENSOR, _NAN, _INF), False: (_TENSOR, _NAN, _INF, re.compile(rb"\x80\x80nf(?![a-z0-9_])"))}


def hs_result(k: Spelling) -> list[bytes]:
    return [rb"tensor\(", b"[:=]" + k.spu + b"*[-+]?(?:nan|inf" + (b"" if k.ascii else b"|" + k.u + b"{2}nf") + b")"]


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

def hs_line_start(k: Spelling) -> tuple[bytes, ...]:
    return (rb"\|", k.words(b"calling "), k.digit + rb"[^\n]*" + k.spu + rb"\.\.\.")


def hs_aiter(k: Spelling) -> list[bytes]:
    # At a line start, after the logger's ``]`` (its ``[aiter ...]`` is not checked), or after a CI
    # timestamp's ``Z ``: a superset of _AITER_LINE_START that Hyperscan finds faster.
    return [*hs_key_value(k), hs_any(b"^", rb"\]" + k.sp + b"?", k.ci()) + hs_any(*hs_line_start(k))]


AITER = Triggers(FOLD, with_printout(picker(key_value, _AITER_LINE_START)), kind_patterns(hs_aiter), PRINTOUT_RAW)


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
def hs_pytest_start(k: Spelling) -> tuple[bytes, ...]:
    return (b"[:=]{3}", b"___", b"---", b"e(?:" + k.sp + b"|$)", *(k.words(w) for w in (
        b"passed ", b"failed ", b"error ", b"xfail ", b"xpass ", b"skipped [", b"no tests ran in ")),
        k.digit + rb"[^\n]*" + k.words(b" in "))


HS_COLONS = b"[:=][:=]"  # key_value's after=":" (``::`` of a -v outcome, ``==`` of a banner)


def hs_pytest(k: Spelling) -> list[bytes]:
    return [*hs_key_value(k, after=(HS_COLONS,)), hs_any(b"^", k.ci()) + hs_any(*hs_pytest_start(k))]


PYTEST = Triggers(FOLD, with_printout(picker(lambda a: key_value(a, after=b":"), _PYTEST_LINE_START)),
                  kind_patterns(hs_pytest), PRINTOUT_RAW)


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


def hs_table_start(k: Spelling) -> tuple[bytes, ...]:
    return (b"[:=]{3}", rb"\[" + k.digit, k.spu + b"+" + hs_any(b"[:=]{3}", rb"\[" + k.digit))


def hs_table_header(k: Spelling) -> list[bytes]:
    patterns = [k.ns + k.sp + k.sp + k.sp + b"*" + k.ns + rb"[^\n]*" + k.sp + k.sp + k.ns]
    if not k.ascii:  # a line with a non-ASCII byte: one run will do
        patterns += [k.u + rb"[^\n]*" + k.sp + k.sp, k.sp + k.sp + rb"[^\n]*" + k.u]
    return patterns


def hs_flydsl(k: Spelling) -> list[bytes]:
    own = (k.words(b"flydsl moe"), k.words(b"testing "), b"failed" + k.spu + b"*$",
           k.digit + b"+" + k.sp + b"tests?" + k.sp + b"failed")
    starts = (*hs_pytest_start(k), *own, k.spu + b"+" + hs_any(*own), *hs_table_start(k))
    return [
        *hs_key_value(k, FLYDSL_NAME_ENDS, after=(HS_COLONS,)), *hs_table_header(k),
        b"check" + k.sp + b"(?:passed|failed)", rb"\|" + k.sp + b"(?:pass|fail)" + k.sp + rb"\|",
        hs_any(b"^", k.ci()) + hs_any(*starts),
    ]


def _flydsl_pick() -> Callable[[bytes, int, int], Passes]:
    nl = re.compile(_FLYDSL_LINE_START)
    line = {a: re.compile(key_value(a, FLYDSL_NAME_ENDS, after=b":")) for a in (False, True)}
    variants = {a: ((line[a], re.compile(_TABLE_HEADER[a]), *_FLYDSL_ANYWHERE), (nl,)) for a in (False, True)}
    return lambda folded, start, end: variants[folded.isascii()]


FLYDSL = Triggers(FOLD, with_printout(_flydsl_pick()), kind_patterns(hs_flydsl), PRINTOUT_RAW)


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


def hs_bench(k: Spelling) -> list[bytes]:
    # After a line start, a side prefix, a logger's ``]`` or a CI timestamp's ``Z ``: a superset.
    sides = (rb"\[(?:[ab]|base|head)\]" + k.spu + b"+", b"[ab][:=]" + k.spu + b"+")
    before = hs_any(b"^", rb"\]" + k.sp + b"?", k.ci(), *sides)
    return [*hs_key_value(k), *hs_table_header(k), before + hs_any(*hs_table_start(k), *hs_line_start(k))]


BENCH = Triggers(FOLD, with_printout(_bench_pick()), kind_patterns(hs_bench), PRINTOUT_RAW)
