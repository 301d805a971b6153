"""API key -> Principal, on every request: an in-memory cache with a few seconds' TTL in front
of the database, invalidated in-process when an admin revokes a key or changes a tenant."""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from datetime import datetime

from gateway.crud.keys import find_key, touch_key
from gateway.db.database import Database
from gateway.db.types import utcnow
from gateway.security.keys import hash_key, key_matches, looks_like_key
from gateway.security.principal import Principal


class InvalidKey(Exception):
    """The key is unusable; the message says why (it is the caller's own key)."""


@dataclass(frozen=True, slots=True)
class _Entry:
    principal: Principal
    fresh_until: float  # time.monotonic()
    key_expires_at: datetime | None


class KeyAuthenticator:
    def __init__(self, database: Database, *, ttl_s: float = 5.0, max_entries: int = 10_000) -> None:
        if ttl_s < 0 or max_entries < 1:
            raise ValueError("ttl_s must be >= 0 and max_entries >= 1")
        self._database, self._ttl_s, self._max_entries = database, ttl_s, max_entries
        self._cache: dict[str, _Entry] = {}  # key hash -> entry
        # Unknown keys too, so a flood of made-up keys does not become a flood of queries.
        # (A new key cannot be in here: its hash was never presented before it existed.)
        self._unknown: dict[str, float] = {}  # key hash -> fresh until
        self._lock = threading.Lock()

    async def authenticate(self, key: str) -> Principal:
        """The key's Principal; InvalidKey if it is malformed, unknown, revoked or expired,
        or its tenant is disabled. A cache hit costs no thread hop and no query."""
        if not looks_like_key(key):
            raise InvalidKey("Incorrect API key provided.")
        key_hash = hash_key(key)
        entry = self._cache.get(key_hash)
        if entry is not None and time.monotonic() < entry.fresh_until:
            if entry.key_expires_at is not None and utcnow() >= entry.key_expires_at:
                raise InvalidKey("This API key has expired.")
            return entry.principal
        unknown_until = self._unknown.get(key_hash)
        if unknown_until is not None and time.monotonic() < unknown_until:
            raise InvalidKey("Incorrect API key provided.")
        return await asyncio.to_thread(self.load, key, key_hash)

    def load(self, key: str, key_hash: str) -> Principal:
        """From the database (in a worker thread); caches the result."""
        with self._database.session() as session:
            found = find_key(session, key_hash=key_hash)
            if found is None or not key_matches(key, found[0].key_hash):
                self._remember_unknown(key_hash)
                raise InvalidKey("Incorrect API key provided.")
            api_key, tenant = found
            if api_key.revoked_at is not None:
                raise InvalidKey("This API key has been revoked.")
            if api_key.expires_at is not None and utcnow() >= api_key.expires_at:
                raise InvalidKey("This API key has expired.")
            if tenant.status != "active":
                raise InvalidKey("This API key's organization is disabled.")
            touch_key(session, key_id=api_key.id)  # at most once per TTL per key
            principal = Principal(
                tenant_id=tenant.id, tenant_name=tenant.name, key_id=api_key.id,
                key_models=None if api_key.models is None else tuple(api_key.models),
                rpm=tenant.rpm, tpm=tenant.tpm, monthly_token_budget=tenant.monthly_token_budget,
                key_rpm=api_key.rpm, key_tpm=api_key.tpm, cache_enabled=tenant.cache_enabled,
                cache_allow_sampling=tenant.cache_allow_sampling, cache_threshold=tenant.cache_threshold,
                cache_ttl_s=tenant.cache_ttl_s, cache_max_entries=tenant.cache_max_entries)
            expires_at = api_key.expires_at
        self._store(key_hash, _Entry(principal, time.monotonic() + self._ttl_s, expires_at))
        return principal

    def _store(self, key_hash: str, entry: _Entry) -> None:
        with self._lock:
            if len(self._cache) >= self._max_entries:
                self._cache.pop(next(iter(self._cache)))  # oldest insertion first
            self._cache[key_hash] = entry

    def _remember_unknown(self, key_hash: str) -> None:
        with self._lock:
            if len(self._unknown) >= self._max_entries:
                self._unknown.pop(next(iter(self._unknown)))
            self._unknown[key_hash] = time.monotonic() + self._ttl_s

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
