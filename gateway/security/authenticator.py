"""API key -> Principal, on every request: an in-memory cache with a few seconds' TTL in front
of the database, invalidated in-process when an admin revokes a key or changes a tenant.

While the database cannot be reached, a key seen recently keeps working from the cache for a
grace period past its TTL; the first lookup that reaches the database again re-validates it
(so a revocation made meanwhile takes effect then). A key the cache cannot vouch for is
AuthUnavailable (retry later), never "invalid": the database, not the key, is what failed."""
from __future__ import annotations

import asyncio
import logging
import math
import contextlib
import threading
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime

from prometheus_client import Counter

from gateway.crud.keys import find_key, get_key, touch_key
from gateway.crud.reservations import active_rates
from gateway.db.database import Database
from gateway.db.models.tenant import Tenant
from gateway.db.errors import database_unavailable
from gateway.db.types import utcnow
from gateway.domain.api_keys import hash_key, key_matches, looks_like_key
from gateway.security.principal import Principal


log = logging.getLogger(__name__)

# Process-wide, like the router's collectors: one /metrics per process.
STALE_SERVED = Counter("tollgate_auth_stale_served", "Keys accepted from the cache past their TTL because "
                       "the database was unreachable")
UNAVAILABLE = Counter("tollgate_auth_unavailable", "Keys refused with 503 because the database was "
                      "unreachable and the cache could not vouch for them")


class InvalidKey(Exception):
    """The key is unusable; the message says why (it is the caller's own key)."""


class AuthUnavailable(Exception):
    """The database cannot be reached and the cache cannot vouch for this key: retry later."""

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True, slots=True)
class _Entry:
    principal: Principal
    fresh_until: float  # KeyAuthenticator clock (time.monotonic)
    key_expires_at: datetime | None


class KeyAuthenticator:
    def __init__(self, database: Database, *, ttl_s: float = 5.0, max_entries: int = 10_000,
                 grace_s: float = 300.0, retry_s: float = 1.0, lookup_timeout_s: float = 3.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`grace_s`: how long past its TTL a cached key is still accepted while the database is
        unreachable. `retry_s`: after a failed lookup, how long lookups skip the database (and
        answer from the cache) rather than each waiting on it again. `lookup_timeout_s`: a lookup
        slower than this counts as unreachable (a database that hangs rather than refuses)."""
        if ttl_s < 0 or max_entries < 1 or grace_s < 0 or retry_s < 0 or lookup_timeout_s <= 0:
            raise ValueError("ttl_s, grace_s and retry_s must be >= 0, lookup_timeout_s > 0, max_entries >= 1")
        self._database, self._ttl_s, self._max_entries = database, ttl_s, max_entries
        self._grace_s, self._retry_s, self._clock = grace_s, retry_s, clock
        self._lookup_timeout_s = lookup_timeout_s
        self._database_down_until = -math.inf  # clock(): lookups before it do not try the database
        self._cache: dict[str, _Entry] = {}  # key hash -> entry
        # Unknown keys too, so a flood of made-up keys does not become a flood of queries.
        # (A new key cannot be in here: its hash was never presented before it existed.)
        self._unknown: dict[str, float] = {}  # key hash -> fresh until
        self._lock = threading.Lock()

    async def authenticate(self, key: str, *, lookup_slot: AbstractAsyncContextManager | None = None) -> Principal:
        """The key's Principal; InvalidKey if it is malformed, unknown, revoked or expired,
        or its tenant is disabled. A cache hit costs no thread hop and no query; a database lookup runs
        inside `lookup_slot` (gateway.security.auth_throttle bounds those of throttled callers)."""
        if not looks_like_key(key):
            raise InvalidKey("Incorrect API key provided.")
        key_hash = hash_key(key)
        now = self._clock()
        entry = self._cache.get(key_hash)
        if entry is not None and now < entry.fresh_until:
            return _unexpired(entry)
        unknown_until = self._unknown.get(key_hash)
        if unknown_until is not None and now < unknown_until:
            raise InvalidKey("Incorrect API key provided.")
        if now < self._database_down_until:
            return self._from_grace(entry, now)
        async with lookup_slot or contextlib.nullcontext():
            return await self._lookup(key, key_hash, entry)

    async def _lookup(self, key: str, key_hash: str, entry: _Entry | None) -> Principal:
        try:
            # On timeout the lookup goes on in its thread (and caches what it finds); we stop waiting.
            async with asyncio.timeout(self._lookup_timeout_s):
                return await asyncio.to_thread(self.load, key, key_hash)
        except Exception as e:
            if not (isinstance(e, TimeoutError) or database_unavailable(e)):
                raise
            self._database_down_until = self._clock() + self._retry_s
            log.warning("key lookup: database unreachable (%s); answering from the cache", type(e).__name__)
            return self._from_grace(entry, self._clock())

    def _from_grace(self, entry: _Entry | None, now: float) -> Principal:
        """The database is unreachable: a key validated within TTL + grace still passes."""
        if entry is None or now >= entry.fresh_until + self._grace_s:
            UNAVAILABLE.inc()
            raise AuthUnavailable("The key could not be checked: the database is unreachable. Retry shortly.",
                                  retry_after_s=max(1.0, self._retry_s))
        STALE_SERVED.inc()
        return _unexpired(entry)

    def load(self, key: str, key_hash: str) -> Principal:
        """From the database (in a worker thread); caches the result, or forgets a key the
        database now refuses (so no grace period can bring a revoked key back)."""
        with self._database.session() as session:
            found = find_key(session, key_hash=key_hash)
            if found is None or not key_matches(key, found[0].key_hash):
                self._forget(key_hash)
                self._remember_unknown(key_hash)
                raise InvalidKey("Incorrect API key provided.")
            api_key, tenant = found
            refusal = refusal_of(api_key, tenant)
            if refusal is not None:
                self._forget(key_hash)
                raise InvalidKey(refusal)
            touch_key(session, key_id=api_key.id)  # at most once per TTL per key
            principal = principal_of(api_key, tenant, reserved=active_rates(session, tenant_id=tenant.id))
            expires_at = api_key.expires_at
        self._store(key_hash, _Entry(principal, self._clock() + self._ttl_s, expires_at))
        return principal

    def _forget(self, key_hash: str) -> None:
        with self._lock:
            self._cache.pop(key_hash, None)

    def _store(self, key_hash: str, entry: _Entry) -> None:
        with self._lock:
            if len(self._cache) >= self._max_entries:
                self._cache.pop(next(iter(self._cache)))  # oldest insertion first
            self._cache[key_hash] = entry

    def _remember_unknown(self, key_hash: str) -> None:
        with self._lock:
            if len(self._unknown) >= self._max_entries:
                self._unknown.pop(next(iter(self._unknown)))
            self._unknown[key_hash] = self._clock() + self._ttl_s

    def invalidate_key(self, key_id: str) -> None:
        self._drop(lambda p: p.key_id == key_id)

    def invalidate_tenant(self, tenant_id: str) -> None:
        self._drop(lambda p: p.tenant_id == tenant_id)

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._unknown.clear()

    def _drop(self, match) -> None:
        with self._lock:
            for h in [h for h, e in self._cache.items() if match(e.principal)]:
                del self._cache[h]


def refusal_of(api_key, tenant) -> str | None:
    """Why the key may not be used now; None when it may."""
    if api_key.revoked_at is not None:
        return "This API key has been revoked."
    if api_key.expires_at is not None and utcnow() >= api_key.expires_at:
        return "This API key has expired."
    if tenant.status != "active":
        return "This API key's organization is disabled."
    return None


def principal_of(api_key, tenant, *, reserved: dict[str, float] | None = None) -> Principal:
    return Principal(
        tenant_id=tenant.id, tenant_name=tenant.name, key_id=api_key.id,
        key_models=None if api_key.models is None else tuple(api_key.models),
        rpm=tenant.rpm, tpm=tenant.tpm, monthly_token_budget=tenant.monthly_token_budget,
        key_rpm=api_key.rpm, key_tpm=api_key.tpm, cache_enabled=tenant.cache_enabled,
        cache_allow_sampling=tenant.cache_allow_sampling, cache_threshold=tenant.cache_threshold,
        cache_ttl_s=tenant.cache_ttl_s, cache_max_entries=tenant.cache_max_entries,
        priority=tenant.priority, share_weight=tenant.share_weight, plan=tenant.plan,
        max_output_tokens=_stricter(tenant.max_output_tokens, api_key.max_output_tokens),
        default_max_tokens=api_key.default_max_tokens if api_key.default_max_tokens is not None
        else tenant.default_max_tokens, output_cap_mode=tenant.output_cap_mode or "reject",
        reserved=tuple(sorted((reserved or {}).items())))


def _stricter(a: int | None, b: int | None) -> int | None:
    return a if b is None else b if a is None else min(a, b)


def principal_by_key_id(session, key_id: str) -> Principal:
    """The principal of a key known by its id (a batch runs as the key that created it); InvalidKey when the
    key is gone, revoked or expired, or its tenant disabled: checked on each call, so a revocation stops a
    batch's remaining lines."""
    api_key = get_key(session, key_id=key_id)
    tenant = None if api_key is None else session.get(Tenant, api_key.tenant_id)
    if api_key is None or tenant is None:
        raise InvalidKey("This API key no longer exists.")
    refusal = refusal_of(api_key, tenant)
    if refusal is not None:
        raise InvalidKey(refusal)
    return principal_of(api_key, tenant, reserved=active_rates(session, tenant_id=tenant.id))


def _unexpired(entry: _Entry) -> Principal:
    if entry.key_expires_at is not None and utcnow() >= entry.key_expires_at:
        raise InvalidKey("This API key has expired.")
    return entry.principal
