"""Work moved off a session's critical path: started in a thread where it overlaps a wait of the
session (the GPU library's start-up, a command that reads its own facts, a running command), and
joined where its result is needed. bench/startup.py shows what each saves."""

from __future__ import annotations

import threading
from typing import Callable, Generic, Optional, Sequence, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """``work()`` run in a daemon thread from now on; :meth:`result` waits for it and returns what it
    returned, or raises what it raised (so a failure surfaces where the result is used)."""

    def __init__(self, work: Callable[[], T], name: str) -> None:
        self._work = work
        self._value: Optional[T] = None
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # handed to whoever asks for the result
            self._error = exc

    def wait(self, timeout_s: Optional[float] = None) -> None:
        self._thread.join(timeout_s)

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


class ParserWarmer:
    """Each target kind's parser loaded once per session (its module, its compiled triggers), in a
    thread started as that kind's first command starts: the parse after the command then starts at
    once instead of paying the imports and the compilation between the command's end and the
    session's end (bench/startup.py: "release -> exit")."""

    def __init__(self) -> None:
        self._kinds: set[str] = set()

    def on_start(self, kind: str, then: Optional[Callable[[Sequence[str]], None]],
                 after: Callable[[], None] = lambda: None) -> Callable[[Sequence[str]], None]:
        """An ``on_start`` callback for ``stream_to_file``: ``then`` first (the guard), ``after`` (work
        kept off the path to the command's start), then the warm-up."""

        def started(stop: Sequence[str]) -> None:
            if then is not None:
                then(stop)
            after()
            if kind not in self._kinds:
                self._kinds.add(kind)
                from pytest_gpuverify.parsers.dispatch import warm

                threading.Thread(target=warm, args=(kind,), name="gpuverify-parser-warm", daemon=True).start()

        return started
