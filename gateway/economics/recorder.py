"""Replica-hours per version, sampled from the pool by every gateway.

Every `interval_s` (at most a minute, so no minute is skipped) a gateway asks its backend how many replicas of
each version hold hardware now and upserts (version, pool, minute) -> count. The key is the minute, not the
sample: two gateways watching the same Ray pool (or one sampling four times a minute) write the same rows, and
a repeated minute keeps the larger count instead of adding (gateway/crud/replica_minutes.py). Replica-hours are
then Σ counts / 60. `pool` tells apart hardware that is not shared: a Ray pool on a cluster is one pool for
every gateway attached to it; each in-process gateway (or gateway with its own local Ray) is a pool of its own.

Chosen over start/stop intervals reported by the replicas themselves: a replica that dies never reports its
stop, and a gateway restart loses nothing here but the minutes it was down. What it misses: minutes when no
gateway is up (replicas then serve nobody, but still cost); a replica counts from the minute it is ready
(RUNNING in Serve's status, standby replicas included), so weight loading before that is not counted.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from gateway.crud.replica_minutes import record_replica_minute
from gateway.db.database import Database
from gateway.db.types import utcnow
from gateway.domain.periodic import Periodic
from gateway.observability.outage import OutageLog

log = logging.getLogger(__name__)


@runtime_checkable
class ReplicaSource(Protocol):
    """A backend that can say how many replicas of each version hold hardware right now."""

    @property
    def replica_pool(self) -> str: ...

    def replica_counts(self) -> dict[str, int]: ...


@dataclass(slots=True)
class RecorderConfig:
    interval_s: float = 15.0

    def __post_init__(self) -> None:
        if not 0 < self.interval_s <= 60:
            raise ValueError(f"interval_s must be in (0, 60] so that every minute is sampled, got {self.interval_s}")


def minute_of(when: datetime) -> datetime:
    return when.replace(second=0, microsecond=0)


class ReplicaRecorder:
    def __init__(self, database: Database, source: ReplicaSource, config: RecorderConfig | None = None, *,
                 clock: Callable[[], datetime] = utcnow) -> None:
        self._database, self._source = database, source
        self._config = config or RecorderConfig()
        self._clock = clock
        self._sampling = OutageLog(log, "replica recorder: sampling")
        self._ticks = Periodic("replica-recorder", self._sample_logged, self._config.interval_s)

    def sample(self) -> dict[str, int]:
        """Record this minute's counts now (blocking: a worker thread's job); returns them."""
        counts = self._source.replica_counts()
        with self._database.engine.begin() as conn:
            record_replica_minute(conn, pool=self._source.replica_pool[:200], minute=minute_of(self._clock()),
                                  counts=counts)
        return counts

    async def start(self) -> None:
        self._ticks.start()

    async def stop(self) -> None:
        """Stop sampling; the minute in progress is recorded once more on the way out."""
        if not self._ticks.running:
            return
        await self._ticks.stop()
        await self._sample_logged()

    async def _sample_logged(self) -> None:
        try:
            await asyncio.to_thread(self.sample)
            self._sampling.succeeded()
        except Exception as e:
            # A supervisor loop: a failed sample (the database briefly down) loses at most this sample; the minute
            # is written again by the next one.
            self._sampling.failed(e)
