"""GET /admin/audit, and one audit row for every admin change made through the HTTP API."""
import httpx
import pytest
from sqlalchemy import delete

from gateway.api.admin.routes import router as admin_routes
from gateway.audit.table import AuditChainHead
from gateway.audit.verify import verify
from gateway.observability.middleware import RequestContextMiddleware
from gateway.routing.router import Router
from gateway.routing.sql_store import SqlRouteStore
from gateway.security.admin_key import admin_actor
from tests.gateway.data_fixtures import ADMIN, TEST_ADMIN_KEY, assert_openai_error, new_tenant_key

ME = admin_actor(TEST_ADMIN_KEY)
MODEL = "smollm2-135m-instruct"


@pytest.fixture
def http(data_app, data_services, database):
    """The admin API with route changes persisted in the database, and request ids as in the gateway."""
    data_app.include_router(admin_routes)
    data_app.state.router = Router(data_services.catalogue, store=SqlRouteStore(database))
    data_app.add_middleware(RequestContextMiddleware, max_body_bytes=1 << 20)
    return httpx.AsyncClient(transport=httpx.ASGITransport(data_app), base_url="http://gateway")


async def _log(http, **params) -> list[dict]:
    r = await http.get("/admin/audit", headers=ADMIN, params=params)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["object"] == "list" and isinstance(body["has_more"], bool)
    return body["data"]


async def _one_new_row(http, seen: int) -> dict:
    rows = await _log(http)
    assert len(rows) == seen + 1, [r["action"] for r in rows]
    assert rows[0]["actor"] == ME
    return rows[0]


async def test_each_admin_change_writes_one_row(http, database):
    r = await http.post("/admin/tenants", headers={**ADMIN, "x-tollgate-actor": "mallory"},
                        json={"name": "acme", "rpm": 60})
    row = await _one_new_row(http, 0)
    assert (row["action"], row["target"], row["before"]) == ("tenant.create", {"type": "tenant", "id": r.json()["id"]},
                                                              None)
    assert row["after"]["name"] == "acme" and row["after"]["rpm"] == 60
    assert row["request_id"] == r.headers["x-request-id"]
    tid = r.json()["id"]

    await http.patch(f"/admin/tenants/{tid}", headers=ADMIN, json={"rpm": None, "tpm": 5})
    row = await _one_new_row(http, 1)
    assert row["action"] == "tenant.update"
    assert (row["before"]["rpm"], row["before"]["tpm"], row["after"]["rpm"], row["after"]["tpm"]) == (60, None, None, 5)

    key = (await http.post(f"/admin/tenants/{tid}/keys", headers=ADMIN, json={"rpm": 3})).json()
    row = await _one_new_row(http, 2)
    assert (row["action"], row["target"]["id"], row["after"]["prefix"], row["after"]["rpm"]) == (
        "key.create", key["id"], key["prefix"], 3)
    assert "key_hash" not in row["after"]

    await http.delete(f"/admin/keys/{key['id']}", headers=ADMIN)
    row = await _one_new_row(http, 3)
    assert row["action"] == "key.revoke" and row["before"]["revoked_at"] is None and row["after"]["revoked_at"]
    await http.delete(f"/admin/keys/{key['id']}", headers=ADMIN)  # already revoked: nothing changes, no row
    assert len(await _log(http)) == 4

    await http.put(f"/admin/prices/{MODEL}", headers=ADMIN, json={
        "input_per_million": "0.2", "output_per_million": "0.4000000001"})
    row = await _one_new_row(http, 4)
    assert (row["action"], row["target"]) == ("price.set", {"type": "price", "id": MODEL})
    assert row["after"]["output_per_million"] == "0.4000000001" and row["before"]["model"] == MODEL
    assert row["before"]["output_per_million"] != row["after"]["output_per_million"]

    await http.put("/admin/routes/chat", headers=ADMIN, json={"weights": {"fp32": 50, "bf16": 50}})
    row = await _one_new_row(http, 5)
    assert (row["action"], row["target"]) == ("route.update", {"type": "route", "id": "chat"})
    assert row["after"]["weights"] == {f"{MODEL}@fp32": 50, f"{MODEL}@bf16": 50}
    await http.post("/admin/routes/chat/rollback", headers=ADMIN)
    assert (await _one_new_row(http, 6))["action"] == "route.rollback"
    await http.post("/admin/routes/chat/promote", headers=ADMIN, json={"version": "bf16"})
    assert (await _one_new_row(http, 7))["action"] == "route.promote"
    assert (await http.get("/admin/routes/audit", headers=ADMIN)).json()["data"][0]["action"] == "promote"

    log = (await http.get("/admin/audit", headers=ADMIN)).text
    assert key["key"] not in log and TEST_ADMIN_KEY not in log  # no secret, ever
    with database.session() as s:
        assert verify(s).ok


async def test_reads_and_refused_changes_write_nothing(http):
    await http.post("/admin/tenants", headers=ADMIN, json={"name": "acme"})
    await http.post("/admin/tenants", headers=ADMIN, json={"name": "acme"})  # 409
    await http.patch("/admin/tenants/nope", headers=ADMIN, json={"rpm": 1})  # 404
    await http.put(f"/admin/prices/{MODEL}", headers=ADMIN, json={"input_per_million": "-1"})  # 400
    await http.put("/admin/routes/chat", headers=ADMIN, json={"weights": {"fp32": 95, "bf16": 10}})  # 400
    await http.post("/admin/tenants", json={"name": "other"})  # 401
    for path in ("/admin/tenants", "/admin/prices", "/admin/bills", "/admin/routes"):
        await http.get(path, headers=ADMIN)
    assert [r["action"] for r in await _log(http)] == ["tenant.create"]


async def test_a_change_that_cannot_be_audited_is_refused_and_not_applied(http, database):
    with database.session() as s, s.begin():
        s.execute(delete(AuditChainHead))
    r = await http.post("/admin/tenants", headers=ADMIN, json={"name": "acme"})
    assert_openai_error(r, 500, code="audit_log_unavailable")
    assert (await http.get("/admin/tenants", headers=ADMIN)).json()["data"] == []


async def test_filters_and_pages(http):
    tid, _ = await new_tenant_key(http, "acme")
    await http.patch(f"/admin/tenants/{tid}", headers=ADMIN, json={"rpm": 7})
    await http.put(f"/admin/prices/{MODEL}", headers=ADMIN, json={"input_per_million": "1", "output_per_million": "2"})
    every = await _log(http)
    assert [r["action"] for r in every] == ["price.set", "tenant.update", "key.create", "tenant.create"]
    assert [r["seq"] for r in every] == [4, 3, 2, 1]
    assert [r["action"] for r in await _log(http, action="tenant.*")] == ["tenant.update", "tenant.create"]
    assert [r["action"] for r in await _log(http, target=f"tenant:{tid}")] == ["tenant.update", "tenant.create"]
    assert [r["action"] for r in await _log(http, target="price")] == ["price.set"]
    assert len(await _log(http, actor=ME)) == 4 and await _log(http, actor="admin:nobody") == []
    assert len(await _log(http, since=every[-1]["at"])) == 4
    assert [r["seq"] for r in await _log(http, until=every[0]["at"])] == [3, 2, 1]
    assert await _log(http, since="2999-01-01") == []

    page = (await http.get("/admin/audit?limit=3", headers=ADMIN)).json()
    assert [r["seq"] for r in page["data"]] == [4, 3, 2] and page["has_more"] is True
    rest = (await http.get(f"/admin/audit?limit=3&after={page['data'][-1]['seq']}", headers=ADMIN)).json()
    assert [r["seq"] for r in rest["data"]] == [1] and rest["has_more"] is False


@pytest.mark.parametrize("query,param", [
    ("since=yesterday", "since"), ("until=2026-13-01", "until"),
    ("since=2026-02-01&until=2026-01-01", "since"), ("limit=0", "limit"), ("limit=1001", "limit"),
    ("limit=many", "limit"), ("after=-1", "after"), ("after=x", "after"), ("after=9223372036854775808", "after"),
    ("target=:abc", "target"), ("since=9999-12-31T23:59:59-23:59", "since"),
])
async def test_bad_parameters_are_400(http, query, param):
    assert_openai_error(await http.get(f"/admin/audit?{query}", headers=ADMIN), 400, param=param)


async def test_the_admin_key_is_required(http):
    assert_openai_error(await http.get("/admin/audit"), 401, code="invalid_api_key")
    assert_openai_error(await http.get("/admin/audit", headers={"Authorization": "Bearer tg-nope"}), 401)


async def test_tenant_plans_and_route_rules_are_audited(http, database):
    t = (await http.post("/admin/tenants", headers=ADMIN, json={"name": "planned", "plan": "free"})).json()
    row = await _one_new_row(http, 0)
    assert row["action"] == "tenant.create" and row["after"]["plan"] == "free"
    await http.patch(f"/admin/tenants/{t['id']}", headers=ADMIN, json={"plan": "pro"})
    row = await _one_new_row(http, 1)
    assert (row["before"]["plan"], row["after"]["plan"]) == ("free", "pro")

    rules = [{"name": "free-to-bf16", "when": {"plan": ["free"]}, "target": "bf16"}]
    r = await http.put("/admin/routes/chat/rules", headers=ADMIN, json={"rules": rules})
    assert r.status_code == 200, r.text
    row = await _one_new_row(http, 2)
    assert (row["action"], row["target"]) == ("route.set_rules", {"type": "route", "id": "chat"})
    assert row["before"] == {"rules": []} and row["after"]["rules"][0]["target"] == {f"{MODEL}@bf16": 100}
    bad = await http.put("/admin/routes/chat/rules", headers=ADMIN, json={"rules": [{"name": "x", "target": "int8"}]})
    assert_openai_error(bad, 400, param="rules.0.target")
    assert len(await _log(http)) == 3  # a refused change writes nothing
    with database.session() as s:
        assert verify(s).ok
