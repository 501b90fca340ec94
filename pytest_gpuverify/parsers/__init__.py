"""Reading a command's saved output: one pass of the kind's recognizers (:mod:`.registry`) over its
lines, a :class:`ParsedOutput` out (:mod:`.reader`). It reads the file as a stream, so output size
never sets memory use.

The package by what a module does: the models at its boundary (:mod:`.result`) and the records a
recognizer yields (:mod:`.evidence`); line reading (``reading/``: the line reader and its prefilter,
statements, tables, columns, measures); the recognizers (``recognizers/``, one module a format
family, found by the registry); and the vocabulary others read back (:mod:`.figures`,
:mod:`.perfstats`, :mod:`.dtypes`).
"""

from importlib import import_module

from pytest_gpuverify.parsers.result import CheckLine, ParseContext, ParsedOutput

# The recognizers load on first use (a session imports them in the background while its first
# command runs: engine/session.py), not with the package.
_LAZY = {
    "parse_output": ".reader",
    "NO_RESULT": ".recognizers.pytest_terminal",
    "RAN_NO_TEST": ".recognizers.pytest_terminal",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {name!r} has no attribute {name!r}")


__all__ = ["CheckLine", "NO_RESULT", "ParseContext", "ParsedOutput", "RAN_NO_TEST", "parse_output"]
