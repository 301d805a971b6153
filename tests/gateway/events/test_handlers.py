"""ReplicaHandlers on a replica: two Routers over one store stand for two gateways over one database."""
from __future__ import annotations

import pytest

from gateway.catalogue import parse_catalogue
from gateway.events import CacheInvalidated, KeyRevoked, RouteChanged, TenantChanged
from gateway.events.handlers import ReplicaHandlers
from gateway.routing.canary import RollbackPolicy
from gateway.routing.router import Router
from gateway.routing.store import MemoryRouteStore
from tests.gateway.routing.conftest import BF16, FP32, raw_catalogue

pytestmark = pytest.mark.asyncio(loop_scope="session")


class FakeAuthenticator:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def invalidate_key(self, key_id: str) -> None:
        self.calls.append(("key", key_id))

    def invalidate_tenant(self, tenant_id: str) -> None:
        self.calls.append(("tenant", tenant_id))

    def clear(self) -> None:
        self.calls.append(("clear",))


class FakeCache:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    async def forget(self, tenant_id: str) -> int:
        self.calls.append(("forget", tenant_id))
        return 0

    async def invalidate(self, tenant_id: str, entry_id: str | None = None) -> int:
        self.calls.append(("invalidate", tenant_id, entry_id))
        return 0

    async def forget_deleted(self) -> int:
        self.calls.append(("forget_deleted",))
        return 0


@pytest.fixture
def replicas():
    catalogue, store = parse_catalogue(raw_catalogue()), MemoryRouteStore()
    rollback = RollbackPolicy(min_samples=3)
    a, b = Router(catalogue, store=store, rollback=rollback), Router(catalogue, store=store, rollback=rollback)
    return a, b


async def test_a_route_change_is_reloaded_from_the_store(replicas):
    a, b = replicas
    told: list[str] = []
    a.listen(told.append)
    a.set_weights("chat", {FP32: 50, BF16: 50})
    assert told == ["chat"] and b.route("chat")["weights"] == {FP32: 90, BF16: 10}
    await ReplicaHandlers(b, FakeAuthenticator()).apply(RouteChanged("chat"))
    assert b.route("chat")["weights"] == {FP32: 50, BF16: 50}


async def test_routing_rules_travel_as_a_route_change(replicas):
    a, b = replicas
    told: list[str] = []
    a.listen(told.append)
    a.set_rules("chat", [{"name": "all-bf16", "target": "bf16"}])
    assert told == ["chat"] and b.rules("chat") == []
    await ReplicaHandlers(b, FakeAuthenticator()).apply(RouteChanged("chat"))
    assert b.rules("chat") == a.rules("chat") and b.rules("chat")[0]["target"] == {BF16: 100}


async def test_an_automatic_rollback_is_announced_and_applied(replicas):
    a, b = replicas
    told: list[str] = []
    a.listen(told.append)
    for _ in range(3):
        a.observe(BF16, ok=False, ttft_s=None, latency_s=0.1)
    assert told == ["chat"] and a.route("chat")["weights"][BF16] == 0
    await ReplicaHandlers(b, FakeAuthenticator()).apply(RouteChanged("chat"))
    assert b.route("chat")["weights"] == {FP32: 100, BF16: 0}
    assert [e.action for e in b.audit(alias="chat")] == ["auto-rollback"]


async def test_keys_tenants_and_cache_entries(replicas):
    _, b = replicas
    auth, cache = FakeAuthenticator(), FakeCache()
    handlers = ReplicaHandlers(b, auth, cache)
    for event in (KeyRevoked("k1"), TenantChanged("t1"), CacheInvalidated("t1"), CacheInvalidated("t1", "e1")):
        await handlers.apply(event)
    assert auth.calls == [("key", "k1"), ("tenant", "t1")]
    # A tenant's rows are gone already (the publisher deleted them); an entry may be held here alone.
    assert cache.calls == [("forget", "t1"), ("invalidate", "t1", "e1")]
    await ReplicaHandlers(b, auth).apply(CacheInvalidated("t1"))  # no semantic cache here: nothing to do


async def test_resync_rebuilds_everything(replicas):
    a, b = replicas
    a.set_weights("chat", {FP32: 0, BF16: 100})
    auth, cache = FakeAuthenticator(), FakeCache()
    await ReplicaHandlers(b, auth, cache).resync()
    assert b.route("chat")["weights"] == {FP32: 0, BF16: 100}
    assert auth.calls == [("clear",)] and cache.calls == [("forget_deleted",)]


async def test_a_console_session_signed_out_elsewhere_is_refused_here(replicas):
    import time

    from gateway.events import SessionRevoked
    from gateway.security.session_revocations import SessionRevocations
    sessions = SessionRevocations()
    handlers = ReplicaHandlers(replicas[0], FakeAuthenticator(), sessions=sessions)
    await handlers.apply(SessionRevoked("sid-1", time.time() + 60))
    await handlers.apply(SessionRevoked("sid-old", time.time() - 1))  # expired anyway: nothing to keep
    assert sessions.revoked("sid-1") and not sessions.revoked("sid-old") and not sessions.revoked("sid-2")
