"""Parsers: a command's saved output in, a :class:`ParsedOutput` out. Each reads the file as a
stream, so output size never sets memory use."""

from .dispatch import parse_output
from .metrics import MetricsObserver
from .pytest_run import NO_RESULT, RAN_NO_TEST
from .result import CheckLine, ParseContext, ParsedOutput

__all__ = ["CheckLine", "MetricsObserver", "NO_RESULT", "ParseContext", "ParsedOutput", "RAN_NO_TEST", "parse_output"]
