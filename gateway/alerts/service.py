"""`Alerts`: the hooks other components call (the ledger, the route store) and the delivery worker, as one
object the gateway's Services builds, starts and stops."""
from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.orm import Session

from gateway.alerts import canary
from gateway.alerts.budget import check_budgets
from gateway.alerts.config import AlertsConfig
from gateway.alerts.guard import in_savepoint
from gateway.alerts.monitor import Monitor
from gateway.alerts.pending import PendingEvents
from gateway.alerts.sealing import seal_stored
from gateway.alerts.worker import DeliveryWorker
from gateway.db.database import Database
from gateway.db.types import utcnow
from gateway.domain.alert_events import LEDGER_SPOOLING, AlertEvent
from gateway.routing.store import AuditEntry
from gateway.security.secret_box import SecretBox

log = logging.getLogger(__name__)


class Alerts:
    def __init__(self, database: Database, config: AlertsConfig | None = None, *, box: SecretBox,
                 deliver: bool = True, owner: str | None = None,
                 health: Callable[[], Awaitable[dict[str, bool]]] | None = None, pool: str = "",
                 **worker_kw: Any) -> None:
        """`box` seals webhook secrets and opens them to sign deliveries (the gateway's one SecretBox).
        `deliver` False: events are still written to the outbox, and another gateway's worker sends them.
        `health` (ModelBackend.health) and its replica `pool` feed version.unhealthy."""
        self.database, self.box = database, box
        self.config = config or AlertsConfig()
        self.pending = PendingEvents()
        self.worker = (DeliveryWorker(database, self.config, box=box, owner=owner, pending=self.pending,
                                      **worker_kw) if deliver else None)
        self.monitor = Monitor(database, self.config, health=health, pool=pool, on_emitted=self._wake)

    async def seal_secrets(self) -> None:
        """Seal the plaintext webhook secrets that rows from before 0017 hold (and re-seal those a rotated-out key
        sealed). Every replica runs it at start-up (Services.start); the writes are conditional, so none clash."""
        def seal() -> int:
            with self.database.engine.begin() as conn:
                return seal_stored(conn, self.box)
        changed = await asyncio.to_thread(seal)
        if changed:
            log.info("alerts: sealed %d webhook secret(s) under the current secret key", changed)

    async def start(self) -> None:
        if self.worker is not None:
            await self.worker.start()
        await self.monitor.start()

    async def stop(self) -> None:
        await self.monitor.stop()
        if self.worker is not None:
            await self.worker.stop()

    def _wake(self) -> None:
        if self.worker is not None:
            self.worker.wake()

    # --- hooks, each in the transaction of the fact it reports

    def after_usage(self, conn: Connection, rows: list[dict[str, Any]]) -> list[str]:
        """Ledger `after_insert`: budget crossings the rows just written caused."""
        ids = in_savepoint(conn, "budget check", check_budgets, rows)
        if ids:
            self._wake()  # runs before the commit: a poll that comes too early finds them at the next one
        return ids

    def on_route_saved(self, session: Session, entry: AuditEntry) -> list[str]:
        """Route store save hook: an automatic rollback is a canary.rolled_back event."""
        ids = in_savepoint(session.connection(), "canary rollback alert",
                           lambda conn, e: canary.on_route_saved(session, e), entry)
        if ids:
            self._wake()
        return ids

    def on_ledger_spooling(self, *, spool_dir: str, reason: str) -> None:
        """The ledger could not reach the database and spools: held in memory until the outbox takes it."""
        self.pending.add(AlertEvent(LEDGER_SPOOLING, {"spool_dir": spool_dir, "reason": reason,
                                                      "host": socket.gethostname(), "pid": os.getpid(),
                                                      "at": utcnow().isoformat()}))
        self._wake()
