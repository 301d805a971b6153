"""The periodic checks: every `check_s`, versions without a healthy replica and the SLO thresholds, and settled
deliveries past `retention_s` pruned. Each is its own transaction; a failing one is logged and tried again at
the next tick."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

from gateway.alerts.config import AlertsConfig
from gateway.alerts.health import check_versions
from gateway.alerts.outbox import prune
from gateway.alerts.slo import check_slos
from gateway.db.database import Database
from gateway.db.types import utcnow
from gateway.domain.periodic import Periodic
from gateway.observability.outage import OutageLog

log = logging.getLogger(__name__)
T = TypeVar("T")


class Monitor:
    def __init__(self, database: Database, config: AlertsConfig, *,
                 health: Callable[[], Awaitable[dict[str, bool]]] | None = None, pool: str = "",
                 on_emitted: Callable[[], None] = lambda: None) -> None:
        self.database, self.config = database, config
        self._health, self._pool, self._on_emitted = health, pool, on_emitted
        # Waits before the first check: versions still warming up at start-up are not an outage.
        self._ticks = Periodic("alerts-monitor", self.check_once, config.check_s, wait_first=True)
        self._outages = {"health": OutageLog(log, "alerts: the version health check"),
                         "slo": OutageLog(log, "alerts: the SLO check"),
                         "prune": OutageLog(log, "alerts: pruning old deliveries")}

    async def start(self) -> None:
        self._ticks.start()

    async def stop(self) -> None:
        await self._ticks.stop()

    async def check_once(self) -> int:
        """Both checks; returns the deliveries written."""
        written = 0
        if self._health is not None:
            try:
                health = await self._health()
                written += len(await asyncio.to_thread(self._in_transaction, check_versions, health,
                                                       pool=self._pool))
                self._outages["health"].succeeded()
            except Exception as e:
                self._outages["health"].failed(e)
        try:
            written += len(await asyncio.to_thread(
                self._in_transaction, lambda conn: check_slos(conn, now=utcnow(), window_s=self.config.slo_window_s,
                                                              min_requests=self.config.slo_min_requests)))
            self._outages["slo"].succeeded()
        except Exception as e:
            self._outages["slo"].failed(e)
        if written:
            self._on_emitted()
        try:
            before = utcnow() - timedelta(seconds=self.config.retention_s)
            await asyncio.to_thread(self._in_transaction, prune, before=before)
            self._outages["prune"].succeeded()
        except Exception as e:
            self._outages["prune"].failed(e)
        return written

    def _in_transaction(self, work: Callable[..., T], *args, **kw) -> T:
        with self.database.engine.begin() as conn:
            return work(conn, *args, **kw)
