"""The delivery worker: a background task in every gateway process that claims due deliveries under a database
lease (two gateways never send one delivery at the same time), sends them, and records each attempt: delivered,
retried later with backoff, or failed after `max_attempts`. A worker that dies mid-send leaves its lease to lapse;
the next one sends the delivery again with the same event id, which receivers dedupe on."""
from __future__ import annotations

import asyncio
import logging
import random
import uuid
from datetime import timedelta

import httpx

from gateway.alerts.config import AlertsConfig
from gateway.alerts.outbox import Claimed, Outcome, claim, emit, settle
from gateway.alerts.pending import PendingEvents
from gateway.alerts.sealing import SecretUnavailable, seal_stored, signing_secret
from gateway.alerts.sender import send
from gateway.alerts.targets import Resolve, TargetPolicy, system_resolve
from gateway.db.database import Database
from gateway.db.types import utcnow
from gateway.domain.alert_events import AlertEvent
from gateway.domain.periodic import Periodic
from gateway.observability.outage import OutageLog
from gateway.security.secret_box import SecretBox

log = logging.getLogger(__name__)


class DeliveryWorker:
    def __init__(self, database: Database, config: AlertsConfig, *, box: SecretBox, owner: str | None = None,
                 pending: PendingEvents | None = None, transport: httpx.AsyncBaseTransport | None = None,
                 rand: random.Random | None = None, resolve: Resolve = system_resolve) -> None:
        """`box` opens the webhooks' sealed secrets to sign each delivery."""
        self.database, self.config, self._box = database, config, box
        self.targets = TargetPolicy(allow_private=config.allow_private, resolve=resolve)
        self.owner = owner or f"alerts-{uuid.uuid4().hex[:16]}"
        self.pending = pending if pending is not None else PendingEvents()
        self._transport, self._rand = transport, rand or random.Random()
        self._client: httpx.AsyncClient | None = None
        self._ticks = Periodic("alerts-delivery", self._poll, config.poll_s,
                               outage=OutageLog(log, "alerts: the delivery poll"))

    async def open(self) -> None:
        """The HTTP client alone: `run_once` may be driven by hand (tests, a one-shot drain)."""
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.config.timeout_s, transport=self._transport,
                                             follow_redirects=False)

    async def start(self) -> None:
        await self.open()
        self._ticks.start()

    async def stop(self) -> None:
        await self._ticks.stop()  # never cancelled mid-settle; a send in flight ends within timeout_s
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def wake(self) -> None:
        """Look for due deliveries now (safe from any thread)."""
        self._ticks.wake()

    async def _poll(self) -> bool:
        return await self.run_once() >= self.config.batch  # a full batch: more may be due, poll again at once

    async def run_once(self) -> int:
        """Write events held in memory, then claim, send and settle one batch. Returns how many were claimed."""
        if len(self.pending):
            await asyncio.to_thread(self.pending.drain, self._write_event)
        if self._client is None:
            raise RuntimeError("start() the worker first")
        claimed = await asyncio.to_thread(self._claim)
        await asyncio.gather(*(self._deliver(c) for c in claimed))
        if any(not c.secret_sealed for c in claimed):  # a row an older gateway wrote (rolling upgrade)
            await asyncio.to_thread(self._seal_stored)
        return len(claimed)

    def _write_event(self, event: AlertEvent) -> None:
        with self.database.engine.begin() as conn:
            emit(conn, event)

    def _seal_stored(self) -> None:
        with self.database.engine.begin() as conn:
            seal_stored(conn, self._box, reseal=False)

    def _claim(self) -> list[Claimed]:
        with self.database.engine.begin() as conn:
            return claim(conn, owner=self.owner, now=utcnow(), lease_s=self.config.lease_s, limit=self.config.batch)

    async def _deliver(self, delivery: Claimed) -> None:
        try:
            secret = signing_secret(delivery.secret, sealed=delivery.secret_sealed, box=self._box)
        except SecretUnavailable as e:
            # Retried like any failure: a replica (or a restart) with the right key may still send it.
            outcome = Outcome(False, None, str(e))
        else:
            outcome = await send(self._client, delivery, secret=secret, timeout_s=self.config.timeout_s,
                                 policy=self.targets)
        now = utcnow()
        attempts = delivery.attempts + 1
        retry_at = None
        if not outcome.ok and attempts < self.config.max_attempts:
            retry_at = now + timedelta(seconds=self.config.backoff.delay_s(attempts - 1, self._rand))
        if not outcome.ok:
            log.warning("alerts: delivery %s to %s failed (attempt %d of %d): %s", delivery.id, delivery.url,
                        attempts, self.config.max_attempts, outcome.error)

        def record() -> bool:
            with self.database.engine.begin() as conn:
                return settle(conn, delivery_id=delivery.id, owner=self.owner, outcome=outcome, now=now,
                              retry_at=retry_at)
        try:
            if not await asyncio.to_thread(record):
                log.warning("alerts: lease on delivery %s lapsed before its attempt was recorded", delivery.id)
        except Exception:
            # The lease lapses by itself and the delivery is sent again (same id): receivers dedupe on it.
            log.exception("alerts: recording the attempt on delivery %s failed", delivery.id)
