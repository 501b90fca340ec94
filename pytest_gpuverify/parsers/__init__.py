"""Parsers: a command's saved output in, a :class:`ParsedOutput` out. Each reads the file as a
stream, so output size never sets memory use."""

from importlib import import_module

from pytest_gpuverify.parsers.result import CheckLine, ParseContext, ParsedOutput

# The parsers themselves load on first use (a session imports them in the background while its
# first command runs: session.py), not with the package.
_LAZY = {"parse_output": ".dispatch", "MetricsObserver": ".metrics", "NO_RESULT": ".pytest_run", "RAN_NO_TEST": ".pytest_run"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["CheckLine", "MetricsObserver", "NO_RESULT", "ParseContext", "ParsedOutput", "RAN_NO_TEST", "parse_output"]
