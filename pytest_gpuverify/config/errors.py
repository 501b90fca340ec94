"""One usage-error type: what the user gave (a file or an option) is missing or wrong.

Every such error carries the same four facts: its ``source`` (the file as the user wrote it, or the
option, e.g. ``--gpu-window``), ``where`` in that file (a section and row, a ``[[targets]]`` block and
key, a line; None for an option or a whole file), the ``message`` and the ``fix``. ``str()`` is the
one line the user sees, ending in ``Fix: ...``:

- a file is named first, as a label: ``env.md: section 'Hosts', row 2 (h): gpus 'x' is not a number. Fix: ...``;
- an option is the subject of its own message, so the line starts with the message:
  ``--gpu-window 'x' is not a number of seconds. Fix: e.g. --gpu-window 2``. A setup check whose
  message names its file mid-sentence (``no host with arch gfx950 in Hosts of env.md``) is shown the
  same way (``named=True``).

The env file, declaration and lock cell errors are thin subclasses that only say how their place is
written (envfile.py, declarations.py, lockspec.py); callers that need not tell them apart catch this.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Union

Source = Union[str, "os.PathLike[str]"]


class UsageError(Exception):
    """A file or option the user gave is missing or wrong, found before anything touches a GPU."""

    def __init__(
        self, source: Source, message: str, fix: str, *, where: str | None = None, named: bool | None = None
    ) -> None:
        self.source, self.where, self.message, self.fix = source, where, message, fix
        # named: the message itself names the source; by default an option is (it is the subject).
        self.named = str(source).startswith("-") if named is None else named
        super().__init__(str(self))

    def __str__(self) -> str:
        lead = "" if self.named else f"{self.source}: " + (f"{self.where}: " if self.where else "")
        # One line whatever a cell or a tool said: the error is shown as the run's single status line.
        return " ".join(f"{lead}{self.message.rstrip('.')}. Fix: {self.fix}".split())

    def __reduce__(self) -> tuple[Any, ...]:
        # Every field survives pickling (xdist, multiprocessing), whatever a subclass's constructor takes.
        return _restore, (type(self), dict(self.__dict__))


def _restore(cls: type[UsageError], state: dict[str, Any]) -> UsageError:
    error = Exception.__new__(cls)
    error.__dict__.update(state)
    Exception.__init__(error, str(error))
    return error


def usage_error_of_line(source: Source, line: str) -> UsageError:
    """A UsageError from a one-line problem another module phrased as ``MESSAGE. Fix: FIX``, shown as
    written (the message names its source)."""
    message, _, fix = line.partition(". Fix: ")
    return UsageError(source, message, fix, named=True)


class DeclarationError(UsageError):
    """A declaration is missing or wrong; its place is a table or block, and the key in it."""

    def __init__(
        self, path: str | os.PathLike, message: str, fix: str, *, where: str | None = None, key: str | None = None
    ) -> None:
        self.path, self.key = Path(path), key
        # The place as shown, key included: "targets[2] (ab-harness) at line 20, key 'command'".
        super().__init__(
            self.path,
            message,
            fix,
            where=", ".join(p for p in (where, f"key {key!r}" if key else None) if p) or None,
            named=False,
        )
