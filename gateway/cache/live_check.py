"""The live accuracy check: a sampled fraction of hits is also answered by the model, in the background,
and the two answers compared; the outcome feeds the tenant's AccuracyAudit (audit.py).

Never on the hit's path: the check is a task of its own, started after the lookup, bounded in number
(a sample beyond `max_in_flight` is skipped), billed to nobody (the caller's `generate` talks to the
backend directly: no ledger row, no limits), and cancelled at shutdown (`close`).

Two answers agree when they are equal once whitespace and case are folded, or when the embedder puts
them at cosine >= `agree_similarity`: at temperature 0 the same question gives the same text, and a true
paraphrase a near-identical one, while a wrong hit (another animal, another year) answers something else.
"""
from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable

from gateway.cache.audit import AccuracyAudit
from gateway.cache.keys import normalise
from gateway.cache.metrics import CacheMetrics

log = logging.getLogger(__name__)

Generate = Callable[[], Awaitable[str]]  # the model's own answer to the request a hit served


class LiveCheck:
    def __init__(self, audit: AccuracyAudit, embedder, metrics: CacheMetrics, *,
                 draw: Callable[[], float] = random.random) -> None:
        self.audit = audit
        self.config = audit.config
        self._embedder = embedder
        self._metrics = metrics
        self._draw = draw
        self._tasks: set[asyncio.Task] = set()
        self._closed = False

    def maybe_check(self, tenant_id: str, served: str, generate: Generate) -> bool:
        """Draw whether this hit is checked; if so, start its check and return True. Never awaits."""
        if self._closed or self.config.fraction <= 0 or self._draw() >= self.config.fraction:
            return False
        if len(self._tasks) >= self.config.max_in_flight:
            self._metrics.audit_checks.labels(tenant_id, "skipped").inc()
            return False
        task = asyncio.create_task(self._check(tenant_id, served, generate))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    def agree(self, served: str, fresh: str) -> bool:
        if normalise(served) == normalise(fresh):
            return True
        if not served.strip() or not fresh.strip():
            return False
        a, b = self._embedder.embed_one(served), self._embedder.embed_one(fresh)
        return float(a @ b) >= self.config.agree_similarity

    async def _check(self, tenant_id: str, served: str, generate: Generate) -> None:
        try:
            fresh = await generate()
            agreed = await asyncio.to_thread(self.agree, served, fresh)
        except asyncio.CancelledError:
            raise
        except Exception:
            # A check that could not run says nothing about the cache: counted, logged, never raised.
            log.warning("semantic cache: live check failed for tenant %s", tenant_id, exc_info=True)
            self._metrics.audit_checks.labels(tenant_id, "failed").inc()
            return
        accuracy = self.audit.record(tenant_id, agreed)
        self._metrics.audited(tenant_id, "agreed" if agreed else "disagreed",
                              accuracy.estimated_wrong_hit_rate, accuracy.tightening)

    async def wait(self) -> None:
        """Until the checks in flight are done (tests, and a graceful drain)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        """Stop sampling and cancel the checks in flight: they are best effort."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
