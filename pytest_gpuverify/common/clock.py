"""One session's clock: wall times derived from monotonic readings.

The wall clock can step (NTP, an admin) between two readings; the monotonic clock cannot. The session
reads both once, and every time it records is that wall time plus the monotonic time elapsed since,
so the times of one session are ordered exactly as the events were. Across sessions of one host they
are as good as the wall clock was at each session's start (the monotonic clock is the host's).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

STAMP_FORMAT = "%Y%m%dT%H%M%S%fZ"  # a run's stamp in its file names (UTC): sorts as it happened


class SessionClock:
    def __init__(self) -> None:
        # The two clocks cannot be read at once: of a few tries, the one with the least time between
        # the monotonic readings around the wall reading (a preemption there would shift every time
        # of the session, and two sessions' times against each other, by its length).
        best = None
        for _ in range(5):
            before = time.monotonic()
            wall = time.time()
            after = time.monotonic()
            if best is None or after - before < best[0]:
                best = (after - before, wall, (before + after) / 2)
        assert best is not None
        self.wall0, self.mono0 = best[1], best[2]

    def wall(self, mono: float | None) -> str | None:
        """``mono`` as an ISO 8601 UTC time with microseconds; None stays None."""
        if mono is None:
            return None
        # in whole microseconds, the start and the offset rounded apart: a float of seconds since the
        # epoch resolves only ~0.24 us, so two readings 1 us apart could print as one time
        return _iso_utc_us(round(self.wall0 * 1e6) + round((mono - self.mono0) * 1e6))


def iso_utc(epoch: float) -> str:
    return _iso_utc_us(round(epoch * 1e6))


def _iso_utc_us(us: int) -> str:
    when = _EPOCH + timedelta(microseconds=us)
    return when.isoformat(timespec="microseconds").replace("+00:00", "Z")


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_iso_utc(text: str) -> float:
    """Seconds since the epoch of an ISO 8601 time written by :func:`iso_utc` (or any with an offset)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
