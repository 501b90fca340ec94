"""A line read as statements: what it says passed or failed, wherever and however it says it.

A status token (``PASS``, ``FAILED``, ``ok``, ``✅``, ``❌``, ``True``/``False``, ``tensor(False)``) or a
failure word (``mismatch``, ``differ``, ``incorrect``, ``do not match``) is read with its context,
which decides what it is:

- **a count** (``FAIL: 1``, ``3 TESTS FAILED``, ``Passed: 12/12``, ``0 failed``): more than none of a
  failure fails, none is nothing; a count of passes passes;
- **negated, conditional or optional** (``no mismatch``, ``may differ``, ``if it fails``, ``failed to
  import``): nothing; ``not passed`` fails;
- **attached to a check**: the token alone on its line (``--> PASS``), in brackets (``[FAIL] gemm``),
  as a value (``status: FAIL``, ``M=256 N=4096: FAIL``, ``| FAIL |``), after a check's noun
  (``Check failed``, ``accuracy: OK``; ``ok`` in lower case is prose, never a status), upper case
  anywhere (``[ts] FAILED: 0.06``), at a line's start
  or end beside a labelled result (``Failed: M=128``, ``M=128 passed``), on a line with a measure
  (``FAILED cos_sim=0.94``); a boolean whose key names a check (``allclose: False``, ``match: True``,
  ``passed=False``), or alone (``False``, ``tensor(False)``); a failure word; a result said to match
  (``Triton and Torch match``); a fail mark anywhere, a pass mark beside a verdict word or a result;
- **unattached**: a ``failed`` word that is none of the above: the caller makes it an alarm.

Passing needs a subject, failing does not: a bare ``True`` proves nothing (``print(torch.cuda.is_available())``),
a bare ``False`` is a failed comparison as surely as any. Each reading names its family (:data:`FAMILIES`),
so a declaration can turn one off (``verdict_lines_off``): its failures then are unattached words, its
passes nothing. Reading is cheap where nothing is said: one gate expression first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# ----- the families (each name a declaration may turn off; examples for the docs and the tests) ---


@dataclass(frozen=True)
class Family:
    name: str
    reads: str
    passes: str | None
    fails: str


FAMILIES = (
    Family(
        "check-mark",
        "a check mark: a fail mark anywhere, a pass mark beside a verdict word or a result",
        "✅ Triton and Torch match",
        "最大误差: 0.008380 ❌",
    ),
    Family(
        "allclose",
        "an allclose result: `allclose: False`, `Allclose(atol=0.1): False`",
        "torch.allclose: True",
        "Allclose(atol=0.1, rtol=0.2): False",
    ),
    Family("correctness", "a verdict after a check's noun", "Correctness test passed!", "verification failed"),
    Family(
        "word-with-figure",
        "a verdict word on a line with a correctness figure",
        "PASSED max_abs_diff=0.0012",
        "FAILED cos_sim=0.9421",
    ),
    Family("word-alone", "a verdict word alone on its line", "--> PASS", "FAILED"),
    Family("tests-summary", "a count of passes or failures", "PASS: 3, FAIL: 0", "PASS: 3, FAIL: 1"),
    Family(
        "status-word",
        "a verdict word as a value, in brackets, in upper case, or at a labelled line's end",
        "M=256 N=4096: PASS",
        "[FAIL] gemm M=128",
    ),
    Family("boolean", "a boolean whose key names a check, or a bare False", "match: True", "tensor(False)"),
    Family(
        "failure-phrase",
        "a failure word: mismatch, differ, incorrect, do not match, NaN detected",
        None,
        "Mismatch found at index 12",
    ),
    Family(
        "match-phrase", "results said to match, or to be identical", "Triton and Torch match", "Outputs do not match"
    ),
)
FAMILY_NAMES = tuple(f.name for f in FAMILIES)


@dataclass(frozen=True)
class Said:
    """One reading: ``passed`` True (a pass), False (a failure), None (an unattached failure word);
    ``word``: the status token read, where one was."""

    passed: bool | None
    family: str
    start: int
    word: str = ""


# ----- the vocabulary ---------------------------------------------------------------------------

PASS_MARKS = "\u2705\u2713\u2714\u2611"  # ✅ ✓ ✔ ☑
FAIL_MARKS = "\u274c\u2717\u2718\u2716\u274e"  # ❌ ✗ ✘ ✖ ❎
_MARK = re.compile(f"[{PASS_MARKS}{FAIL_MARKS}]")
_TOKEN = re.compile(
    r"(?<![\w\-./\\#])(?:(?P<fail>FAIL(?:ED|URES?|S|ING)?|Fail(?:ed|ures?|s|ing)?|fail(?:ed|ures?|s|ing)?)"
    r"|(?P<pass>PASS(?:ED|ES)?|Pass(?:ed|es)?|pass(?:ed|es)?)|(?P<ok>OK|Ok|ok))(?![\w\-/\\])"
)
_UPPER = frozenset(("FAIL", "FAILED", "FAILURE", "FAILS", "PASS", "PASSED"))
_UNATTACHED = frozenset(("failed", "FAILED", "Failed", "FAIL", "FAILURE"))  # alarms when attached to nothing
_WORDS = r"(?:tests?|checks?|cases?|shapes?|configs?|configurations?|comparisons?|assertions?|items?|kernels?|ops?)"
_COUNT_AFTER = re.compile(r"\s*[:=]\s*(?P<n>\d+)(?:\s*(?:/|of)\s*\d+)?(?![\d.])")
_COUNT_BEFORE = re.compile(
    rf"(?:(?<![\w.+\-])(?P<n>\d+)(?:\s*(?:/|of)\s*\d+)?|(?P<some>some|all|every|\d+\s+of\s+the))"
    rf"(?:\s+{_WORDS})?\s+(?:have\s+|has\s+|were\s+|are\s+)?$",
    re.I,
)
_SUMMARY_WORDS = re.compile(rf"\b(?:some|all|every|any|\d+)\s+(?:\w+\s+)?{_WORDS}\s*$", re.I)
_NEGATED = re.compile(r"(?:\b(?:no|none|zero|without|nothing|never)\b|\bnot\b)(?:\s+\w+){0,2}\s*$", re.I)
_NOT_DIRECTLY = re.compile(r"\b(?:not|never)\s*$", re.I)
_MODAL = re.compile(
    r"\b(?:may|might|can|could|will|would|should|shall|must|if|when|whether|unless|to|expect(?:ed|s)?)"
    r"(?:\s+\w+){0,2}\s*$",
    re.I,
)
_FAILED_TO = re.compile(r"\s+to\s+(?P<verb>\w+)")
# ``failed to match`` is a failed check; ``failed to import`` an optional thing that was not there
FAILURE_VERBS = frozenset(("match", "pass", "verify", "validate", "converge", "compare", "agree"))
OPTIONAL_VERBS = frozenset(
    (
        "import",
        "load",
        "find",
        "locate",
        "open",
        "read",
        "fetch",
        "download",
        "detect",
        "resolve",
        "register",
        "get",
        "set",
        "parse",
        "use",
        "initialize",
        "init",
        "connect",
        "remove",
        "delete",
        "write",
        "save",
        "query",
        "infer",
        "determine",
        "acquire",
        "retrieve",
        "access",
        "start",
        "create",
        "copy",
        "close",
        "send",
        "update",
    )
)
_NOUN = (
    r"(?:check|checks|test|tests|verif\w*|valid\w*|correctness|accuracy|comparison|result|results|assert"
    r"|assertion|numerics|allclose|all_close|output|outputs|case|sanity|precision|numerical)"
)
_NOUN_BEFORE = re.compile(
    rf"\b{_NOUN}(?:[ _-]\w+){{0,2}}?[\s_]*(?:is|was|has|have|are|were|:|=|-+>|->|=>)?[\s]*$", re.I
)
_VALUE_BEFORE = ("=", ":", "->", "=>", "\u2192", "|", "\u2502", ",")
_EDGE = " \t[](){}<>-=:.!*#|\u2192~\u2502"  # what may surround a word standing alone
_LABELLED = re.compile(r"[=:]")
_VALUE_AFTER = re.compile(r"^\s*:\s*[-+]?(?:\d|\.\d|nan|inf)", re.I)  # a verdict with its figure
_PASS_WORD = re.compile(
    r"(?<![\w-])(?:match(?:es|ed|ing)?|pass(?:es|ed)?|correct|ok|success(?:ful)?|identical|equal"
    r"|same|close|verified|valid|agree(?:s|d)?)(?![\w-])",
    re.I | re.A,
)
_RESULT_LIKE = re.compile(r"[:=]\s*[-+]?\d|\w=\S")  # a measure or a labelled value: ``err: 0.01``, ``M=256``

# booleans: ``key: False``, ``key = tensor(True, device='cuda:0')``, ``allclose False``
_BOOL = re.compile(r"(?<![\w.])(?:tensor\(\s*)?(?P<v>True|False)(?![\w])")
_BOOL_KEY = re.compile(r"(?P<key>[A-Za-z_][\w.]*(?:\([^()]*\))?)\s*(?:[:=]=?|\bis\b|->)?\s*(?:tensor\(\s*)?$")
_BARE_BOOL = re.compile(r"^\s*(?:tensor\(\s*)?(?P<v>True|False)\s*(?:,[^()]*)?\)?\s*$")
CHECK_KEYS = frozenset(
    (
        "allclose",
        "isclose",
        "close",
        "match",
        "matches",
        "matched",
        "correct",
        "correctness",
        "passed",
        "pass",
        "ok",
        "equal",
        "identical",
        "same",
        "accurate",
        "consistent",
        "success",
        "successful",
        "verified",
        "valid",
        "result",
    )
)
FAIL_KEYS = frozenset(
    (
        "failed",
        "fail",
        "failure",
        "mismatch",
        "mismatches",
        "mismatched",
        "nan",
        "wrong",
        "incorrect",
        "differ",
        "differs",
        "different",
    )
)
_KEY_SPLIT = re.compile(r"[._\s]+")

# failure words, said of results: ``Results differ!``, ``Mismatch found at index 12``, ``Incorrect results``,
# ``Outputs do not match``, ``NaN detected in output`` (``type hints mismatch`` is no result's)
_RESULT_NOUNS = (
    r"(?:results?|outputs?|values?|answers?|tensors?|elements?|data|numerics|implementations?|kernels?"
    r"|out|ref|reference|expected|actual|gpu|cpu|device|host|torch|triton|golden)"
)
_FAILURE = re.compile(
    r"(?<![\w\-./#])(?:(?P<mismatch>mismatch(?:es|ed)?)|(?P<incorrect>incorrect)|(?P<differ>differ(?:s|ed)?)"
    r"|(?P<wrong>wrong)|(?P<not>(?:do|does|did)\s*(?:not|n't)\s+match|not\s+(?:match(?:ing|ed)?|close|equal"
    r"|identical|the\s+same|correct)|(?:is|are|were|was)\s+different)"
    r"|(?P<nan>nan\s+(?:detected|found|encountered|appeared|in\s+(?:the\s+)?(?:output|result)s?)))(?![\w\-])",
    re.I,
)
_NOT_RESULTS = re.compile(
    r"^\W*(?:\w+\W+){0,2}?(?:type|hint|version|signature|pattern|format|schema|regex|key|name"
    r"|config|arg|param)",
    re.I,
)
_NOUN_NEAR_BEFORE = re.compile(rf"\b{_RESULT_NOUNS}\b(?:\W+\w+){{0,2}}\W*$|\band\s+[\w.]+\s*$", re.I)
_NOUN_NEAR_AFTER = re.compile(rf"^\W*(?:\w+\W+){{0,2}}?{_RESULT_NOUNS}\b", re.I)
_ATTACHED_AFTER = re.compile(
    r"^\s*(?:!|found|at\b|in\s+(?:element|index|row|col)|between|detected|of\s+\d|\(|:\s*\d|\d)", re.I
)
_TYPE_BEFORE = re.compile(r"\b(?:type|hints?|version|signature|dtype|shape|key|name|schema|config)s?\W*$", re.I)
_WRONG_SUBJECT = re.compile(r"^\s+(?:results?|outputs?|values?|answers?|output|data)\b|^\s*[!.]?\s*$", re.I)
_WRONG_BEFORE = re.compile(r"\b(?:is|are|was|were)\s*$|[:=]\s*$", re.I)
_COUNT_AFTER_WORD = re.compile(r"(?:\s+[A-Za-z]\w*){0,2}\s*[:=]\s*(?P<n>[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")
_MATCH = re.compile(
    r"(?<![\w-])(?:verifie[sd]\b(?!\s*[:=]\s*(?:no|false|fail|n)\b)|(?:results?|outputs?|values?|tensors?|implementations?|kernels?|answers?|[\w.]+\s+and\s+[\w.]+)"
    r"\s+(?:all\s+)?(?:match(?:es|ed)?|agree|are\s+(?:close|equal|identical|the\s+same|consistent))"
    r"|match(?:es|ed)?\s+(?:the\s+)?(?:reference|ref|expected|baseline|torch|pytorch|numpy|golden))(?![\w-])",
    re.I,
)


_GATE_WORDS = (
    "pass",
    "fail",
    "ok",
    "true",
    "false",
    "match",
    "differ",
    "correct",
    "wrong",
    "nan",
    "close",
    "equal",
    "identical",
    "agree",
    "same",
    "consistent",
    "verifie",
)
_GATE = re.compile("|".join(_GATE_WORDS))  # one search of the lower-cased line (re.I is 30 times slower)


def may_say(text: str) -> bool:
    """Whether ``text`` may say anything :func:`read` reads (one search for any of a few words: most
    lines read hold none; a mark is non-ASCII)."""
    return _GATE.search(text.lower()) is not None or (not text.isascii() and _MARK.search(text) is not None)


def read(text: str, measured: bool = False) -> list[Said]:
    """What ``text`` (one line, or one ``\\r`` piece of one) says; ``measured``: a correctness measure
    was read on it (``cos_sim=0.99``: a verdict word beside it is that figure's)."""
    if not may_say(text):
        return []
    said: list[Said] = []
    if not text.isascii():
        said += _marks(text)
    if "rue" in text or "alse" in text:
        said += _booleans(text)
    for token in _TOKEN.finditer(text):
        reading = _token(text, token, measured)
        if reading is not None:
            said.append(reading)
    said += _failure_words(text)
    if not any(s.passed is False or s.family == "check-mark" for s in said):
        found = _MATCH.search(text)
        if found is not None and not _NEGATED.search(text, 0, found.start()):
            said.append(Said(True, "match-phrase", found.start()))
    return said


def status_of_cell(cell: str) -> bool | None:
    """A table cell's verdict: True, False, or None when the cell says neither (a status column's
    ``SUCCESS`` is a run's status, not a check's: the caller decides)."""
    text = cell.strip()
    if not text:
        return None
    if text[0] in PASS_MARKS:
        return True
    if text[0] in FAIL_MARKS:
        return False
    word = text.strip(_EDGE).lower()
    if word in ("pass", "passed", "ok", "true", "yes", "correct", "match", "matched", "y"):
        return True
    if word in ("fail", "failed", "failure", "false", "no", "incorrect", "mismatch", "wrong", "n", "not ok"):
        return False
    return None


# ----- readers ------------------------------------------------------------------------------------


def _marks(text: str) -> list[Said]:
    out = []
    for mark in _MARK.finditer(text):
        if mark.group() in FAIL_MARKS:
            out.append(Said(False, "check-mark", mark.start()))
        elif _PASS_WORD.search(text) or _RESULT_LIKE.search(text):
            out.append(Said(True, "check-mark", mark.start()))
    return out


def _booleans(text: str) -> list[Said]:
    bare = _BARE_BOOL.match(text)
    if bare is not None:
        return [Said(False, "boolean", bare.start("v"))] if bare["v"] == "False" else []
    out = []
    for found in _BOOL.finditer(text):
        key = _BOOL_KEY.search(text, 0, found.start())
        if key is None:
            continue
        words = [w.lower() for w in _KEY_SPLIT.split(re.sub(r"\(.*\)", "", key["key"])) if w]
        last = words[-1] if words else ""
        if last in CHECK_KEYS:
            family = "allclose" if last in ("allclose", "isclose", "close") else "boolean"
            out.append(Said(found["v"] == "True", family, found.start()))
        elif last in FAIL_KEYS and found["v"] == "True":
            out.append(Said(False, "boolean", found.start()))
    return out


def _token(text: str, token: re.Match[str], measured: bool) -> Said | None:
    """One status token in its context (the module's docstring)."""
    word = token.group()
    failing = token["fail"] is not None
    start, end = token.span()
    before, after = text[:start], text[end:]
    if token["ok"] is not None:
        return _ok(text, start, before, after, word)
    count = _COUNT_AFTER.match(after)
    if count is None:
        counted = _COUNT_BEFORE.search(before)
        if counted is not None:
            number = counted["n"]
            return None if number is not None and int(number) == 0 else Said(not failing, "tests-summary", start)
    else:
        n = int(count["n"])
        return None if n == 0 else Said(not failing, "tests-summary", start)
    if not failing:
        if _NOT_DIRECTLY.search(before):
            return Said(False, "correctness", start)  # ``check not passed``
    elif _NEGATED.search(before):
        return None  # ``no test failed``, ``never failed``
    if failing and word.lower() == "failed" and (verb := _FAILED_TO.match(after)) is not None:
        verb_word = verb["verb"].lower()
        if verb_word in FAILURE_VERBS:
            return Said(False, "correctness", start)
        if verb_word in OPTIONAL_VERBS:
            return None
        return Said(None, "status-word", start)  # ``failed to launch``: the run says something broke
    if failing and _MODAL.search(before):
        return None  # ``this may fail``, ``if any check fails``
    family = _attached(text, word, before, after, measured)
    if family is not None:
        return Said(not failing, family, start, word)
    if failing and word in _UNATTACHED:
        return Said(None, "status-word", start)
    return None


def _attached(text: str, word: str, before: str, after: str, measured: bool) -> str | None:
    """The family of a token attached to a check where it stands, or None."""
    head, tail = before.strip(_EDGE), after.strip(_EDGE)
    if not head and not tail:
        return "word-alone"
    if _SUMMARY_WORDS.search(before):
        return "tests-summary"  # ``all checks passed``, ``some tests FAILED``
    if _NOUN_BEFORE.search(before):
        return "correctness"
    if measured:
        return "word-with-figure"
    b, a = before.rstrip(), after.lstrip()
    if b.endswith(("[", "(")) and a.startswith(("]", ")")):
        return "status-word"
    if b.endswith(_VALUE_BEFORE):
        return "status-word"
    if word in _UPPER:
        return "status-word"
    if not head and (not a or a[0] in ":![(" or a.startswith(" -") or after.startswith(" -")):
        return "status-word"  # ``Failed: M=128``, ``Passed!``
    if _VALUE_AFTER.match(after):
        return "status-word"  # ``Backward Convolution Weights Failed: 0.993599``
    if not tail and _LABELLED.search(before):
        return "status-word"  # ``M=128 N=4096 passed``
    return None


def _ok(text: str, start: int, before: str, after: str, word: str) -> Said | None:
    """``OK`` in upper case: a pass where it stands as a status (``ok`` in lower case is prose)."""
    if word != "OK":
        return None
    head, tail = before.strip(_EDGE), after.strip(_EDGE)
    if _NOUN_BEFORE.search(before):
        return Said(True, "correctness", start)
    if _NOT_DIRECTLY.search(before):
        return Said(False, "correctness", start)  # ``NOT OK``
    if not head and not tail:
        return Said(True, "word-alone", start)
    b, a = before.rstrip(), after.lstrip()
    if (b.endswith(("[", "(")) and a.startswith(("]", ")"))) or b.endswith(_VALUE_BEFORE):
        return Said(True, "status-word", start)
    return None


def _failure_words(text: str) -> list[Said]:
    out = []
    for found in _FAILURE.finditer(text):
        start, end = found.span()
        before, after = text[:start], text[end:]
        if _NEGATED.search(before) or _MODAL.search(before):
            continue  # ``no mismatch``, ``results may differ``
        if _said_of_results(found, before, after):
            out.append(Said(False, "failure-phrase", start))
    return out


def _said_of_results(found: re.Match[str], before: str, after: str) -> bool:
    """Whether a failure word says results are wrong (not ``type hints mismatch``, ``0 mismatches``)."""
    word = found.group()
    if _TYPE_BEFORE.search(before) or _NOT_RESULTS.match(after):
        return False
    if found["nan"] is not None:
        return True
    if found["wrong"] is not None:
        return word.isupper() or bool(_WRONG_SUBJECT.match(after) or _WRONG_BEFORE.search(before))
    if found["mismatch"] is not None:
        counted = _COUNT_AFTER_WORD.match(after)
        if counted is not None:
            number = counted["n"]
            return not ("." in number or "e" in number.lower()) and int(number) != 0  # a ratio is a measure
        counted_before = re.search(r"(?<![\d.])(\d+)\s*$", before)
        if counted_before is not None:
            return int(counted_before.group(1)) != 0  # ``0 mismatches``
    if word.isupper() or not before.strip(_EDGE):
        return True  # ``MISMATCH``, ``Mismatch found at index 12``, ``Incorrect results!``
    return bool(
        _NOUN_NEAR_BEFORE.search(before)
        or _NOUN_NEAR_AFTER.match(after)
        or _ATTACHED_AFTER.match(after)
        or found["not"] is not None
        and not after.strip()
    )
