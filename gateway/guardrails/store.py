"""A tenant's rules as the pipeline reads them: from the database, kept `ttl_s` seconds per tenant.

How a change reaches every replica: the replica that saved it forgets its copy at once (`invalidate`), the
others re-read within `ttl_s`. A short-lived cache rather than an event on the bus: the bus's events say what
changed for things a replica holds long (routes, keys, cached answers), while here a re-read every couple of
seconds per active tenant costs one primary-key lookup, and a replica that missed an event cannot keep stale
rules for longer than the TTL."""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from gateway.crud.guardrails import get_rules
from gateway.db.database import Database
from gateway.guardrails.rules import Rule, parse_rules


@dataclass(slots=True)
class StoreConfig:
    ttl_s: float = 2.0  # the longest a replica applies rules another replica has replaced
    max_tenants: int = 10_000  # cached rule sets; past it the cache starts over

    def __post_init__(self) -> None:
        if self.ttl_s < 0:
            raise ValueError(f"ttl_s must be >= 0, got {self.ttl_s}")
        if self.max_tenants < 1:
            raise ValueError(f"max_tenants must be >= 1, got {self.max_tenants}")


class GuardrailStore:
    def __init__(self, database: Database, config: StoreConfig | None = None) -> None:
        self._database, self.config = database, config or StoreConfig()
        self._cached: dict[str, tuple[float, tuple[Rule, ...]]] = {}
        # One read in flight per tenant, shared by every request that finds the copy missing or expired: a burst
        # of a tenant's requests costs one query, not one each (which would queue in the thread pool the ledger
        # and the rest of the gateway share, and slow every request of the burst).
        self._reading: dict[str, asyncio.Future] = {}
        self._generation: dict[str, int] = {}  # bumped by invalidate: a read begun before it caches nothing

    async def rules_for(self, tenant_id: str) -> tuple[Rule, ...]:
        """The tenant's rules; a database error propagates (the request fails: guardrails fail closed)."""
        hit = self._cached.get(tenant_id)
        if hit is not None and hit[0] > time.monotonic():
            return hit[1]
        reading = self._reading.get(tenant_id)
        if reading is None:
            reading = asyncio.ensure_future(self._load(tenant_id))
            self._reading[tenant_id] = reading
            reading.add_done_callback(lambda done: self._forget(tenant_id, done))
        return await asyncio.shield(reading)  # one waiter cancelled (its client left) leaves the read to the rest

    async def _load(self, tenant_id: str) -> tuple[Rule, ...]:
        generation = self._generation.get(tenant_id, 0)
        rules = tuple(parse_rules(await asyncio.to_thread(self._read, tenant_id)))
        if self._generation.get(tenant_id, 0) == generation:  # not replaced while it was read
            if len(self._cached) >= self.config.max_tenants:
                self._cached.clear()
            self._cached[tenant_id] = (time.monotonic() + self.config.ttl_s, rules)
        return rules

    def _forget(self, tenant_id: str, done: asyncio.Future) -> None:
        if self._reading.get(tenant_id) is done:
            del self._reading[tenant_id]
        if not done.cancelled():
            done.exception()  # retrieved: a failed read is the waiters' error, not an unhandled one

    def invalidate(self, tenant_id: str) -> None:
        self._generation[tenant_id] = self._generation.get(tenant_id, 0) + 1
        self._cached.pop(tenant_id, None)
        self._reading.pop(tenant_id, None)  # the next request reads afresh, after the change

    def _read(self, tenant_id: str) -> list[dict]:
        with self._database.session() as session:
            return get_rules(session, tenant_id=tenant_id)
