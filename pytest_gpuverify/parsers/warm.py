"""Each target kind's recognizers loaded in a thread as that kind's first command starts, so the
reading after the command starts at once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence


class ParserWarmer:
    """Each target kind's parser loaded once per session (its module, its compiled triggers), in a
    thread started as that kind's first command starts: the parse after the command then starts at
    once instead of paying the imports and the compilation between the command's end and the
    session's end (bench/startup.py: "release -> exit")."""

    def __init__(self) -> None:
        self._kinds: set[str] = set()

    def on_start(
        self, kind: str, then: Callable[[Sequence[str]], None] | None, after: Callable[[], None] = lambda: None
    ) -> Callable[[Sequence[str]], None]:
        """An ``on_start`` callback for ``stream_to_file``: ``then`` first (the guard), ``after`` (work
        kept off the path to the command's start), then the warm-up."""

        def started(stop: Sequence[str]) -> None:
            if then is not None:
                then(stop)
            after()
            if kind not in self._kinds:
                self._kinds.add(kind)
                from pytest_gpuverify.parsers.reader import warm  # off the session's start

                threading.Thread(target=warm, args=(kind,), name="gpuverify-parser-warm", daemon=True).start()

        return started
