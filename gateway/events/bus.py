"""The event bus: how a change made on one gateway replica reaches the others.

The publishing replica has applied its change already; `publish` only tells the others, and
never blocks or raises (an admin request must not fail because the bus did). A receiving replica
hands each event to its `Applier`, or asks it to `resync` everything from the database when it
cannot tell what it missed."""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Annotated, Protocol

from pydantic import Field

from gateway.domain.backoff import Backoff
from gateway.domain.validation import Count, Seconds, config
from gateway.events.events import Event, Resync

log = logging.getLogger("tollgate.events")


class Applier(Protocol):
    async def apply(self, event: Event) -> None:
        """Bring this replica up to date with one change another replica made (a Resync event
        arrives as a call to `resync`)."""
        ...

    async def resync(self) -> None:
        """Rebuild what events would have changed from the database (events were missed)."""
        ...


class EventBus(Protocol):
    async def start(self, applier: Applier) -> None:
        """Begin delivering other replicas' events to `applier`. Never fails start-up."""
        ...

    async def stop(self) -> None:
        ...

    def publish(self, event: Event) -> None:
        """Tell the other replicas; thread-safe, non-blocking, never raises."""
        ...


@config(slots=True)
class EventBusConfig:
    prefix: Annotated[str, Field(min_length=1)] = "tollgate:events"  # keys <prefix>:version|epoch|log, channel <prefix>
    tick_s: Seconds = 0.5  # how often a replica compares the version counter with what it applied
    timeout_s: Annotated[float, Field(gt=0, le=0.25)] = 0.25  # every Redis call: never holds a replica up
    log_size: Count = 1000  # recent events kept in Redis for replicas that missed a message
    outbox_size: Count = 1000  # events waiting for Redis; beyond it they collapse into one Resync
    apply_timeout_s: Seconds = 5.0  # an applier slower than this leaves the replica to resync
    backoff_initial_s: Seconds = 0.05  # reconnecting to Redis: first wait, doubled per failure
    backoff_max_s: Seconds = 1.0

    def __post_init__(self) -> None:
        if self.backoff_max_s < self.backoff_initial_s:
            raise ValueError("backoff_max_s must be >= backoff_initial_s")

    @property
    def backoff(self) -> Backoff:
        """Between reconnections (and re-sends): doubling, capped, each wait a random 50-100% of its step so
        replicas that lost Redis together do not all come back in the same instant."""
        return Backoff(self.backoff_initial_s, self.backoff_max_s, (0.5, 1.0))


@dataclass(slots=True)
class BusStats:
    published: int = 0  # events this replica got into Redis (or to its in-process peers)
    delivered: int = 0  # other replicas' events applied as they arrived
    replayed: int = 0  # other replicas' events applied from the log after a missed message
    resyncs: int = 0  # full rebuilds from the database
    reconnects: int = 0  # connections to Redis lost and made again
    failures: int = 0  # Redis calls or appliers that failed


class LocalEventBus:
    """In process: a gateway without Redis is one replica, so there is no one to tell. Buses
    built on one `peers` list deliver to each other (several gateways in one process, tests)."""

    def __init__(self, peers: list[LocalEventBus] | None = None) -> None:
        self._peers = peers if peers is not None else []
        self._queue: asyncio.Queue[Event] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self.stats = BusStats()

    async def start(self, applier: Applier) -> None:
        self._loop, self._queue = asyncio.get_running_loop(), asyncio.Queue()
        self._task = asyncio.create_task(self._deliver(applier), name="local-event-bus")
        self._peers.append(self)

    async def stop(self) -> None:
        if self in self._peers:
            self._peers.remove(self)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def publish(self, event: Event) -> None:
        self.stats.published += 1
        for peer in list(self._peers):
            if peer is not self:
                peer._receive(event)

    def _receive(self, event: Event) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, event)
        except RuntimeError:  # the peer's loop is closed: it is shutting down
            log.debug("event for a stopped in-process peer dropped", extra={"event": repr(event)})

    async def _deliver(self, applier: Applier) -> None:
        while True:
            event = await self._queue.get()
            try:
                await (applier.resync() if isinstance(event, Resync) else applier.apply(event))
                self.stats.delivered += 1
            except Exception:
                self.stats.failures += 1
                log.exception("applying an event failed; resyncing", extra={"event": repr(event)})
                try:
                    await applier.resync()
                    self.stats.resyncs += 1
                except Exception:
                    log.exception("resync failed")
