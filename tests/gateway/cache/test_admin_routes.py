"""DELETE /admin/tenants/{id}/cache[/{entry_id}] and GET .../cache/stats, behind the admin key."""
from types import SimpleNamespace

import httpx
import pytest
from fastapi import FastAPI

from gateway.api.admin.cache import router
from gateway.api.errors import install_error_handlers
from gateway.audit.query import AuditQuery, list_records
from gateway.audit.table import AuditChainHead, AuditLogRow
from gateway.db.base import Base
from gateway.db.database import Database
from gateway.security.admin_key import admin_actor
from tests.gateway.cache.conftest import ask

ADMIN_KEY = "tga-cache-test-admin-0123456789abcdef"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


@pytest.fixture
def database(tmp_path):
    """Where invalidations are audited."""
    db = Database(f"sqlite:///{tmp_path / 'audit.db'}")
    Base.metadata.create_all(db.engine, tables=[AuditLogRow.__table__, AuditChainHead.__table__])
    yield db
    db.dispose()


@pytest.fixture
def client(cache, database):
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(router)
    app.state.services = SimpleNamespace(cache=cache, admin_key=ADMIN_KEY, database=database)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://gateway")


async def test_stats_and_invalidation(client, cache, policy):
    first = await cache.store(ask("How do I reset my password?"), policy, "Use the link.", 5, 3, "stop")
    await cache.store(ask("How do I track my order?"), policy, "Open Orders.", 5, 3, "stop")
    await cache.lookup(ask("How do I reset my password?"), policy)

    stats = (await client.get("/admin/tenants/t1/cache/stats", headers=ADMIN)).json()
    assert (stats["entries"], stats["hits"], stats["namespaces"]) == (2, 1, 1)

    response = await client.delete(f"/admin/tenants/t1/cache/{first}", headers=ADMIN)
    assert response.status_code == 200 and response.json()["deleted"] == 1
    missing = await client.delete(f"/admin/tenants/t1/cache/{first}", headers=ADMIN)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"

    response = await client.delete("/admin/tenants/t1/cache", headers=ADMIN)
    assert response.json() == {"tenant_id": "t1", "deleted": 1}
    assert (await cache.lookup(ask("How do I track my order?"), policy)).status == "miss"


async def test_each_invalidation_is_audited(client, cache, policy, database):
    entry = await cache.store(ask("How do I reset my password?"), policy, "Use the link.", 5, 3, "stop")
    await client.delete(f"/admin/tenants/t1/cache/{entry}", headers=ADMIN)
    await client.delete(f"/admin/tenants/t1/cache/{entry}", headers=ADMIN)  # 404 here, still told to replicas
    await client.delete("/admin/tenants/t1/cache", headers=ADMIN)
    await client.get("/admin/tenants/t1/cache/stats", headers=ADMIN)  # a read: not audited
    with database.session() as s:
        rows = list_records(s, AuditQuery()).data
    assert [(r.action, r.target_id, r.after["deleted_here"]) for r in rows] == [
        ("cache.invalidate", "t1", 0), ("cache.invalidate", f"t1/{entry}", 0),
        ("cache.invalidate", f"t1/{entry}", 1)]
    assert {r.actor for r in rows} == {admin_actor(ADMIN_KEY)}


async def test_another_tenants_entry_is_not_found(client, cache, policy):
    entry = await cache.store(ask("How do I reset my password?"), policy, "Use the link.", 5, 3, "stop")
    assert (await client.delete(f"/admin/tenants/t2/cache/{entry}", headers=ADMIN)).status_code == 404
    assert cache.stats("t1").entries == 1


@pytest.mark.parametrize("path,param", [
    ("/admin/tenants/a%00b/cache", "tenant_id"), (f"/admin/tenants/{'x' * 65}/cache", "tenant_id"),
    ("/admin/tenants/t1/cache/e%0a1", "entry_id")])
async def test_ids_the_database_cannot_hold_are_400(client, path, param, database):
    response = await client.delete(path, headers=ADMIN)
    assert response.status_code == 400 and response.json()["error"]["param"] == param
    with database.session() as s:
        assert list_records(s, AuditQuery()).data == []


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer tg-some-tenant-key"}])
async def test_admin_key_required(client, headers):
    assert (await client.delete("/admin/tenants/t1/cache", headers=headers)).status_code == 401
    assert (await client.get("/admin/tenants/t1/cache/stats", headers=headers)).status_code == 401
