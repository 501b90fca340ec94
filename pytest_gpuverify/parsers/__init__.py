"""Parsers: a command's saved output in, a :class:`ParsedOutput` out. Each reads the file as a
stream, so output size never sets memory use."""

from .result import CheckLine, ParsedOutput

__all__ = ["CheckLine", "ParsedOutput"]
