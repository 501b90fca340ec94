"""Which artifact names a run has taken, so that no two targets of one run write the same file.

One session keeps them in memory. xdist workers of one run also create a claim file per name, with
``O_EXCL``, in a folder the controller made for the run (outside the ticket folder, which holds only
artifacts): the first worker to claim ``bench_slow.json`` gets it, the next one ``bench_slow-2.json``,
and each reports the name it really wrote. An artifact of an earlier run is no claim: it is moved
aside when this run writes its own (:func:`.store.keep_previous`).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def shared_topic_problem(topic: str | None, names: list[str]) -> str | None:
    """--gpu-topic names one artifact: with two or more targets it would name none of them truly."""
    if not topic or len(names) < 2:
        return None
    shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
    return (
        f"--gpu-topic {topic} names one target's artifact, but {len(names)} targets were collected "
        f"({shown}). Fix: run one target, or drop --gpu-topic (each gets its own topic)"
    )


class TopicClaims:
    """The names taken; ``shared_dir``: the folder where the workers of one xdist run claim theirs."""

    def __init__(self, shared_dir: str | Path | None = None) -> None:
        self.shared_dir = Path(shared_dir) if shared_dir else None
        self._taken: set[tuple[str, str]] = set()

    def claim(self, out_dir: Path, base: str) -> str:
        """``base``, else ``base-2``, ``base-3``...: the first name not yet taken in ``out_dir``."""
        topic, n = base, 1
        while not self._take(out_dir, topic):
            n += 1
            topic = f"{base}-{n}"
        return topic

    def _take(self, out_dir: Path, topic: str) -> bool:
        key = (os.path.abspath(out_dir), topic)
        if key in self._taken:
            return False
        if self.shared_dir is not None:
            name = hashlib.sha256("\0".join(key).encode()).hexdigest()[:40]
            try:
                os.close(os.open(self.shared_dir / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except FileExistsError:
                return False
        self._taken.add(key)
        return True
