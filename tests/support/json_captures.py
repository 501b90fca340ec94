"""Captures of tools' JSON that their source cut mid-document."""

from __future__ import annotations

import json


def close_json(text: str) -> str:
    """Repair a capture cut mid-JSON (``[... excerpt ends here ...]``): drop the cut line(s) and close
    the open brackets, so the part that was captured can still be checked."""
    lines = [ln for ln in text.split("\n") if not ln.startswith("[...")]
    while lines:
        body, stack, in_str, esc = "\n".join(lines).rstrip().rstrip(","), [], False, False
        for ch in body:
            if in_str:
                esc, in_str = (not esc and ch == "\\"), in_str and (esc or ch != '"')
            elif ch == '"':
                in_str = True
            elif ch in "[{":
                stack.append("]" if ch == "[" else "}")
            elif ch in "]}":
                stack.pop()
        candidate = body + "".join(reversed(stack))
        try:
            json.loads(candidate)
            return candidate
        except ValueError:
            lines.pop()
    raise AssertionError("could not repair sample JSON")
