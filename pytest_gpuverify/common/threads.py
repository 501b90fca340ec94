"""Work moved off a session's critical path: started in a thread where it overlaps a wait of the
session (the GPU library's start-up, a command that reads its own facts, a running command), and
joined where its result is needed. bench/startup.py shows what each saves."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """``work()`` run in a daemon thread from now on; :meth:`result` waits for it and returns what it
    returned, or raises what it raised (so a failure surfaces where the result is used)."""

    def __init__(self, work: Callable[[], T], name: str) -> None:
        self._work = work
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # handed to whoever asks for the result
            self._error = exc

    def wait(self, timeout_s: float | None = None) -> None:
        self._thread.join(timeout_s)

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


def environ_copy() -> dict[str, str]:
    """This process's environment, copied from a thread of the session. The main thread may set or
    remove a variable meanwhile (pytest sets PYTEST_CURRENT_TEST at each test's phase and removes it
    after): a copy that meets the change raises RuntimeError ("dictionary changed size during
    iteration") or KeyError (a name listed, then gone). It is copied again."""
    while True:
        try:
            return dict(os.environ)
        except (RuntimeError, KeyError):
            continue
