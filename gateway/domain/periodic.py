"""`Periodic`: one background task that runs a tick every `interval_s` from start() until stop(). Every polling
loop in the gateway (health and metrics polls, the webhook worker and monitor, the batch runner, the spool replay,
the replica recorder) is one of these, so each starts, stops and survives a failure the same way:

- a tick that raises is reported (to `outage`, or logged with its traceback) and the next tick runs on time: a
  background loop never dies of one bad tick;
- a tick that returns True runs again at once (more work is waiting, e.g. a full batch was claimed);
- wake() runs the next tick now, from any thread;
- stop() lets a tick in flight finish (a half-done claim or insert is never cancelled) and awaits the task."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

log = logging.getLogger(__name__)


class Outage(Protocol):
    """Where a loop reports its ticks (gateway.observability.outage.OutageLog: one line when failures start,
    one when they end)."""

    def failed(self, error: BaseException) -> None: ...

    def succeeded(self) -> None: ...


class Periodic:
    def __init__(self, name: str, tick: Callable[[], Awaitable[object]], interval_s: float, *,
                 wait_first: bool = False, outage: Outage | None = None) -> None:
        """`wait_first`: the first tick comes an interval after start() (or at the first wake()), not at once."""
        if not interval_s > 0:
            raise ValueError(f"{name}: interval_s must be > 0, got {interval_s}")
        self.name, self.interval_s = name, interval_s
        self._tick, self._wait_first, self._outage = tick, wait_first, outage
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start ticking (in the running event loop); a second call does nothing."""
        if self._task is None:
            self._loop, self._stopping = asyncio.get_running_loop(), False
            self._task = asyncio.create_task(self._run(), name=self.name)

    def wake(self) -> None:
        """Run the next tick now rather than at the end of the interval. Safe from any thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            here = asyncio.get_running_loop() is loop
        except RuntimeError:
            here = False  # a worker thread
        if here:
            self._wake.set()
        else:
            loop.call_soon_threadsafe(self._wake.set)

    async def stop(self) -> None:
        """No more ticks; returns once a tick in flight has finished."""
        if self._task is None:
            return
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        await task

    async def _run(self) -> None:
        if self._wait_first:
            await self._pause()
        while not self._stopping:
            if not await self._tick_once():
                await self._pause()

    async def _tick_once(self) -> bool:
        try:
            again = await self._tick()
        except Exception as e:
            if self._outage is not None:
                self._outage.failed(e)
            else:
                log.exception("%s: a tick failed; trying again in %gs", self.name, self.interval_s)
            return False
        if self._outage is not None:
            self._outage.succeeded()
        return again is True

    async def _pause(self) -> None:
        if self._stopping:
            return
        try:
            async with asyncio.timeout(self.interval_s):
                await self._wake.wait()
        except TimeoutError:
            pass
        self._wake.clear()
