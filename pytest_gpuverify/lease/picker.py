"""Picking idle GPUs and locking them: the builtin picker and the env file's picker command.

Either way the order is the documented one (docs/hosts.md, "The right GPU, alone"): choose by the window,
take the lock without waiting, re-check idleness under the lock, and only then hand the GPU out.
A GPU that is busy is taken, lock or no lock.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pytest_gpuverify.config.envfile import LockSpec
from pytest_gpuverify.execute.host_commands import HostRunner
from pytest_gpuverify.lease.lock import GpuLease, is_locked_elsewhere
from pytest_gpuverify.lease.lockwait import LockWaiters
from pytest_gpuverify.lease.sampler import IdleSampler
from pytest_gpuverify.records.artifact import NO_GPU

PICKER_TIMEOUT_S = 20.0  # one picker command call, as one GPU tool call (gpu/rocm.py, gpu/nvidia.py)


class NoGpu(Exception):
    """No GPU stayed idle and unlocked within the wait. ``str()`` starts with NO_GPU."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"{NO_GPU}: {detail}")
        self.detail = detail


class PickerError(Exception):
    """The picker command failed or printed no GPU index. Names the command and the fix."""


@dataclass
class GpuGrant:
    """GPUs held for one command, in the order the command sees them."""

    leases: list[GpuLease]
    own_marks: list = field(default_factory=list)

    @property
    def indices(self) -> list[int]:
        return [lease.gpu_index for lease in self.leases]

    @property
    def taken_at(self) -> float | None:
        """Monotonic time the last of its locks was taken (the hold is whole from then)."""
        return max(lease.acquired_at or 0.0 for lease in self.leases) or None

    @property
    def released_at(self) -> float | None:
        """Monotonic time the first of its locks was let go (the hold ended then)."""
        return min(lease.released_at or 0.0 for lease in self.leases) or None

    @property
    def fds(self) -> list[int]:
        """The lock descriptors, for the session's guard to hold duplicates of."""
        return [lease.fileno() for lease in self.leases]


class GpuPicker:
    """Hands out locked idle GPUs. ``picker_command`` None means the builtin picker."""

    # While waiting, a GPU whose lock someone holds is waited for by a thread blocked on that lock
    # (lockwait.py): it is ours the moment it is let go. Busy or unread GPUs are re-judged when the
    # background window changes, looked at every TICK_S.
    TICK_S = 0.05

    def __init__(
        self,
        sampler: IdleSampler,
        lock: LockSpec,
        host: HostRunner,
        picker_command: str | None = None,
        picker_timeout_s: float = PICKER_TIMEOUT_S,
        on_wait: Callable[[str], None] | None = None,
        where: str | None = None,  # the host's name, for the wait line (several hosts: remote/)
    ) -> None:
        self.where = where
        self.sampler = sampler
        self.lock = lock
        self.host = host
        self.picker_command = picker_command
        self.picker_timeout_s = picker_timeout_s
        self.on_wait = on_wait
        # GPUs granted outside the plugin (grants.py), set once the session knows them: only these are picked
        self.granted: list[int] | None = None
        self.granted_by = ""  # what granted them, for the refusal's words
        # GPUs the history store judged unhealthy (index -> why), set once at the session's start: never picked
        self.unhealthy: dict[int, str] = {}

    def acquire(self, count: int = 1, wait_s: float = 0.0, cancelled: threading.Event | None = None) -> GpuGrant:
        """``cancelled``: set by the caller (pickahead.py) to stop a wait: NoGpu then."""
        deadline = time.monotonic() + max(0.0, wait_s)
        self.sampler.wait_for_full_window()
        deadline = max(deadline, self.sampler.patience_until or 0.0)
        waiters = LockWaiters()
        try:
            leases = self._acquire(count, deadline, waiters, cancelled or threading.Event())
        finally:
            waiters.cancel()
        grant = GpuGrant(leases)
        grant.own_marks = [self.sampler.mark_own_start(lease.gpu_index) for lease in leases]
        return grant

    def _acquire(self, count: int, deadline: float, waiters: LockWaiters, cancelled: threading.Event) -> list[GpuLease]:
        last_sample = time.monotonic()
        waited = False
        won: list[GpuLease] = []
        first = True
        while True:
            # a picker command gets the tool timeout once, then never runs past the --gpu-wait deadline
            limit = self.picker_timeout_s if first else min(self.picker_timeout_s, deadline - time.monotonic())
            first = False
            leases, why, locked = self._try_once(count, max(0.1, limit), won)
            won = []
            if leases or deadline - time.monotonic() <= 0 or cancelled.is_set():
                if waited and self.on_wait:
                    self.on_wait("")  # the wait is over: clear the live line
                if not leases:
                    raise NoGpu(why)
                return leases
            remaining = deadline - time.monotonic()
            if self.on_wait:
                waited = True
                self.on_wait(f"waiting up to {remaining:.0f} s{f' on {self.where}' if self.where else ''}: {why}")
            if self.picker_command is not None:
                cancelled.wait(min(1.0, remaining))
            else:
                for index in locked:
                    waiters.wait_on(index, self.lock.path_for(index))
                # every lease the waiters won, tried together: one taken per round left the rest held by
                # this process and counted as locked, so a multi-GPU pick could hold most GPUs and never run
                won = waiters.all_won(min(self.TICK_S, remaining))
            # the background sampler keeps the window fresh; without one (window 0), read now and then
            if not self.sampler.running and time.monotonic() - last_sample >= self.sampler.interval_s:
                self.sampler.sample_now(shared=True)
                last_sample = time.monotonic()

    def release(self, grant: GpuGrant) -> None:
        for lease in grant.leases:
            lease.release()
        for mark in grant.own_marks:
            self.sampler.mark_own_end(mark)

    # -- one attempt ----------------------------------------------------------------------------
    def _try_once(
        self, count: int, picker_timeout_s: float, won: list[GpuLease] | None = None
    ) -> tuple[list[GpuLease], str, list[int]]:
        """Locked idle GPUs, or none and why (and which idle ones someone holds). ``won``: leases the
        waiters took; each is re-checked like one taken here, and released if it does not serve."""
        if self.picker_command is not None:
            index = self._run_picker_command(picker_timeout_s)
            verdict = self._window_verdict()
            known = set(verdict.idle) | set(verdict.busy)
            if not known:  # nothing to check the index against, and so nothing to re-check it with
                return [], _describe_refusal(count, {}, [], verdict.error or "no GPU reading"), []
            if self.granted is not None and index not in self.granted:
                raise PickerError(
                    f"picker command {self.picker_command!r} printed GPU {index}, but {self.granted_by} granted "
                    f"only GPU(s) {_ranges(sorted(self.granted)) or 'none'}. Fix: make the picker choose among the "
                    "granted GPUs, or set the picker cell of the GPU lock table to builtin"
                )
            if index not in known:  # refused before its lock file is made
                raise PickerError(
                    f"picker command {self.picker_command!r} printed GPU {index}, but this host's readings "
                    f"have GPUs {_ranges(sorted(known))}. Fix: make the picker print a HIP index of this host, "
                    "or set the picker cell of the GPU lock table to builtin"
                )
            candidates, busy, error = [index], {}, None
            if index in self.unhealthy:
                return [], _describe_refusal(count, {}, [], None, {index: self.unhealthy[index]}), []
        else:
            verdict = self._window_verdict()
            candidates, busy, error = verdict.idle, dict(verdict.busy), verdict.error
            candidates = [i for i in candidates if i not in self.unhealthy]
            if self.granted is not None:  # in the grant's order: a command asking for 1 gets the first idle one
                candidates = [i for i in self.granted if i in candidates]
                busy = {i: why for i, why in busy.items() if i in self.granted}
        mine = {lease.gpu_index: lease for lease in won or []}
        for index in [i for i in mine if i not in candidates]:  # the window has called it busy since: not taken
            mine.pop(index).release()
        candidates = [*(i for i in candidates if i in mine), *(i for i in candidates if i not in mine)]
        held: list[GpuLease] = []
        locked: list[int] = []
        for index in candidates:
            if index in mine:
                lease = mine.pop(index)
            else:
                lease = GpuLease(self.lock.path_for(index), index)
                if not lease.try_acquire():
                    locked.append(index)
                    continue
            reason = self.sampler.recheck(index)
            if reason:
                lease.release()
                busy[index] = f"{reason} (under the lock)"
                continue
            held.append(lease)
            if len(held) == count:
                for rest in mine.values():  # won, and not needed
                    rest.release()
                return held, "", []
        for lease in held:
            lease.release()
        skipped = {i: why for i, why in self.unhealthy.items() if self.granted is None or i in self.granted}
        refusal = _describe_refusal(count, busy, locked, error, skipped)
        if self.granted is not None:
            refusal += f" among GPU(s) {_ranges(sorted(self.granted)) or 'none'}, granted by {self.granted_by}"
        return [], refusal, locked

    def _window_verdict(self):
        generation = self.sampler.generation
        cached = getattr(self, "_cached_verdict", None)
        if cached is None or cached[0] != generation:
            cached = (generation, self.sampler.judge_window())
            self._cached_verdict = cached
        return cached[1]

    def _run_picker_command(self, timeout_s: float) -> int:
        assert self.picker_command is not None  # called only when the Hosts row names one
        result = self.host.run(["sh", "-c", self.picker_command], timeout=timeout_s)
        if result.timed_out:
            raise PickerError(
                f"picker command {self.picker_command!r} gave no answer within {timeout_s:.3g} s. "
                "Fix: make the picker cell of the GPU lock table print one index at once, or set it to builtin"
            )
        lines = [ln.strip() for ln in result.text().splitlines() if ln.strip()]
        if not result.ok or not lines or not re.fullmatch(r"\d+", lines[-1]):
            raise PickerError(
                f"picker command {self.picker_command!r} gave no GPU index ({result.describe()}). "
                "Fix: make the picker cell of the GPU lock table print one index, or set it to builtin"
            )
        return int(lines[-1])


def _ranges(indices: list[int]) -> str:
    """``0-3, 6`` for [0, 1, 2, 3, 6]."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _describe_refusal(
    count: int, busy: dict[int, str], locked: list[int], error: str | None, unhealthy: dict[int, str] | None = None
) -> str:
    parts = []
    if error:
        parts.append(f"GPU reading failed: {error}")
    if unhealthy:
        parts.append(
            f"{len(unhealthy)} skipped for their health ("
            + ", ".join(f"gpu {i}: {r}" for i, r in sorted(unhealthy.items()))
            + ")"
        )
    if busy:
        parts.append(f"{len(busy)} busy (" + ", ".join(f"gpu {i}: {r}" for i, r in sorted(busy.items())) + ")")
    if locked:
        parts.append(f"{len(locked)} held by locks (gpu " + ", ".join(map(str, sorted(locked))) + ")")
    need = "idle GPU" if count == 1 else f"{count} idle GPUs at once"
    return f"no {need}: " + ("; ".join(parts) if parts else "no GPU found")


__all__ = ["GpuGrant", "GpuPicker", "NoGpu", "PickerError", "is_locked_elsewhere"]
