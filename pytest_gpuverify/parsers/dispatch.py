"""Which parser reads which target kind's output."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from .result import ParseContext, ParsedOutput


def parse_output(kind: str, path: Path, context: Optional[ParseContext] = None) -> ParsedOutput:
    from .aiter import parse_aiter_output

    return parse_aiter_output(path)
