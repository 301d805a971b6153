"""Deadlines that blame the server only for its own delays.

A wall-clock timeout in an event loop measures the loop as much as the server: with hundreds of
requests in flight a loop can run each callback a few hundred milliseconds late, and a healthy
Redis then "times out", trips the breaker, and a gateway that is merely busy starts counting its
limits in process. (Sixty-odd connections opened at once after a restart are enough: ~0.1 s of
lateness, 0.3 s per call.) So a deadline that comes due while the loop has been running late is
extended, in steps, up to a hard cap; one that comes due while the loop kept time fires: the server
had the whole timeout to answer, and an answer would have been read at once."""
from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopWatch:
    """How late this event loop has been running its callbacks: a tick every `period_s`, each
    remembering for `window_s` how late it ran (a tick at t, late by d: the loop was stuck in [t-d, t])."""

    def __init__(self, *, period_s: float = 0.02, window_s: float = 1.0) -> None:
        if period_s <= 0 or window_s <= period_s:
            raise ValueError(f"need 0 < period_s < window_s, got {period_s}, {window_s}")
        self.period_s, self.window_s = period_s, window_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._samples: deque[tuple[float, float]] = deque()  # (when, lateness)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._arm()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self) -> None:
        self._due = self._loop.time() + self.period_s
        self._handle = self._loop.call_at(self._due, self._tick)

    def _tick(self) -> None:
        now = self._loop.time()
        self._samples.append((now, now - self._due))
        while self._samples and self._samples[0][0] < now - self.window_s:
            self._samples.popleft()
        self._arm()

    def late_share(self, since: float) -> float:
        """The share of the time from `since` (loop time) to now that the loop was running late, the
        current stall included. Busy with other work or starved of CPU, it reads near 1; waiting on
        I/O with a spike or two from a loaded machine, a few per cent."""
        if self._handle is None or self._loop is not asyncio.get_running_loop():
            return 0.0  # not watching this loop: plain timeouts
        now = self._loop.time()
        if now <= since:
            return 0.0
        late = max(0.0, now - self._due)
        for when, lag in reversed(self._samples):
            if when <= since:
                break
            late += min(lag, when - since)
        return min(1.0, late / (now - since))


LATE = 0.25  # a loop late for more than this share of a timeout was not keeping time


async def within(coro: Coroutine[Any, Any, T], timeout_s: float, hard_s: float, watch: LoopWatch) -> T:
    """Await `coro` for at most `timeout_s`, TimeoutError after that. While the loop has been late by
    more than LATE of the last `timeout_s`, the deadline moves on in half-timeout steps, never past
    `hard_s` in all.

    `coro` runs as a task of its own, so the caller is let go at its deadline even if the awaited
    code is slow to honour a cancellation (a client library unwinding a half-read reply)."""
    loop = asyncio.get_running_loop()
    task = loop.create_task(coro)
    start = loop.time()
    due = start + timeout_s
    try:
        while True:
            await asyncio.wait((task,), timeout=max(0.0, due - loop.time()))
            if task.done():
                return task.result()
            now = loop.time()
            # Judge the last timeout_s only: a stall when the call began does not excuse a silent server.
            if now - start >= hard_s or watch.late_share(max(start, now - timeout_s)) <= LATE:
                raise TimeoutError(f"no answer within {now - start:.3f}s")
            due = min(now + timeout_s / 2, start + hard_s)
    finally:
        if not task.done():
            task.cancel()  # it unwinds on its own; nobody waits for it
            task.add_done_callback(_quietly)


def _quietly(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()  # retrieved, so asyncio does not log it as never retrieved
