"""What another replica's change means here: re-read a route, forget cached keys and answers, refuse a
console session signed out there."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from gateway.events.events import (CacheInvalidated, Event, KeyRevoked, RouteChanged, SessionRevoked, TenantChanged,
                                   UpstreamChanged)
from gateway.routing.router import Router
from gateway.security.authenticator import KeyAuthenticator
from gateway.security.session_revocations import SessionRevocations


class ReplicaHandlers:
    """The gateway's Applier (gateway.events.bus). `cache` is the SemanticCache, when enabled; `upstreams` the
    LiveUpstreams (gateway.upstreams.live), when the catalogue names upstreams."""

    def __init__(self, router: Router, authenticator: KeyAuthenticator, cache=None, upstreams=None,
                 sessions: SessionRevocations | None = None) -> None:
        self._router, self._authenticator, self._cache = router, authenticator, cache
        self._upstreams = upstreams
        self._sessions = sessions if sessions is not None else SessionRevocations()
        self._handlers: dict[type, Callable[[Event], Awaitable[None]]] = {
            RouteChanged: self._route_changed, CacheInvalidated: self._cache_invalidated,
            TenantChanged: self._tenant_changed, KeyRevoked: self._key_revoked,
            SessionRevoked: self._session_revoked, UpstreamChanged: self._upstream_changed}

    async def apply(self, event: Event) -> None:
        await self._handlers[type(event)](event)

    async def resync(self) -> None:
        """Every route from the database, no cached key, no cached answer whose row is gone."""
        # Routes first: with the database down this fails before any cached key is forgotten, so
        # keys keep their grace period through the outage (the bus retries the resync every tick).
        await asyncio.to_thread(self._router.reload)
        self._authenticator.clear()
        if self._cache is not None:
            await self._cache.forget_deleted()
        if self._upstreams is not None:
            await self._upstreams.load_all()

    async def _route_changed(self, event: RouteChanged) -> None:
        await asyncio.to_thread(self._router.reload, event.alias)  # a database read

    async def _cache_invalidated(self, event: CacheInvalidated) -> None:
        if self._cache is None:
            return
        if event.entry_id is None:
            await self._cache.forget(event.tenant_id)  # the publisher deleted the rows already
        else:
            # The entry may live on this replica only (each keeps the answers it generated).
            await self._cache.invalidate(event.tenant_id, event.entry_id)

    async def _tenant_changed(self, event: TenantChanged) -> None:
        self._authenticator.invalidate_tenant(event.tenant_id)

    async def _key_revoked(self, event: KeyRevoked) -> None:
        self._authenticator.invalidate_key(event.key_id)

    async def _upstream_changed(self, event: UpstreamChanged) -> None:
        if self._upstreams is not None:
            await self._upstreams.reload(event.name)  # a database read; resets its health and circuit

    async def _session_revoked(self, event: SessionRevoked) -> None:
        self._sessions.revoke(event.sid, event.until)
