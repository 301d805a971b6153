"""/admin/webhooks: create (validated), list and read (the secret never comes back), delete, deliveries, test
pings, and the audit rows each change writes without the secret."""
import json

import pytest
from sqlalchemy import text

from tests.gateway.data_fixtures import ADMIN, assert_openai_error

SECRET = "whsec-0123456789abcdef"
GOOD = {"url": "https://hooks.example.com/tollgate", "events": ["budget.crossed", "canary.rolled_back"],
        "secret": SECRET}


@pytest.fixture
def db_url(sqlite_url):
    return sqlite_url  # the routes are thin; the outbox's concurrency is tested on PostgreSQL in tests/gateway/alerts


async def _create(http, **overrides) -> dict:
    r = await http.post("/admin/webhooks", headers=ADMIN, json={**GOOD, **overrides})
    assert r.status_code == 201, r.text
    return r.json()


async def test_create_list_read_never_show_the_secret(admin_http):
    made = await _create(admin_http, thresholds={"error_rate": 0.05, "ttft_p99_ms": 2000})
    assert made["id"].startswith("wh_") and made["secret_hint"] == "…cdef"
    assert made["events"] == GOOD["events"] and made["thresholds"] == {"error_rate": 0.05, "ttft_p99_ms": 2000}
    listed = (await admin_http.get("/admin/webhooks", headers=ADMIN)).json()
    one = (await admin_http.get(f"/admin/webhooks/{made['id']}", headers=ADMIN)).json()
    assert [w["id"] for w in listed["data"]] == [made["id"]] and one == made
    for shown in (json.dumps(made), json.dumps(listed), json.dumps(one)):
        assert SECRET not in shown and "secret\"" not in shown.replace("secret_hint\"", "")


async def test_the_stored_row_holds_the_secret_sealed_never_in_plaintext(admin_http, data_services):
    made = await _create(admin_http)
    with data_services.database.engine.connect() as conn:
        row = conn.execute(text("SELECT * FROM webhooks WHERE id = :id"), {"id": made["id"]}).mappings().one()
    assert SECRET not in json.dumps({k: str(v) for k, v in row.items()})
    assert row["secret_sealed"] and data_services.secret_box.open(row["secret"]) == SECRET


async def test_wildcard_and_duplicate_events(admin_http):
    made = await _create(admin_http, events=["*", "ledger.spooling", "ledger.spooling"])
    assert made["events"] == ["*", "ledger.spooling"]


@pytest.mark.parametrize("body,param", [
    ({**GOOD, "url": "ftp://example.com/x"}, "url"),
    ({**GOOD, "url": "not a url"}, "url"),
    ({**GOOD, "url": "https://"}, "url"),
    ({**GOOD, "url": "http://example.com:99999999/"}, "url"),
    ({**GOOD, "url": 5}, "url"),
    ({**GOOD, "events": []}, "events"),
    ({**GOOD, "events": ["budget.crossed", "budget.exploded"]}, "events"),
    ({**GOOD, "events": "budget.crossed"}, "events"),
    ({**GOOD, "secret": "short"}, "secret"),
    ({**GOOD, "secret": "x" * 201}, "secret"),
    ({**GOOD, "secret": "0123456789abcdef\u0000"}, "secret"),
    ({**GOOD, "secret": "0123456789abcdef\ud800"}, "secret"),
    ({**GOOD, "secret": "0123456789 abcdef"}, "secret"),
    ({**GOOD, "url": "https://example.com/\ud800"}, "url"),
    ({k: v for k, v in GOOD.items() if k != "secret"}, "secret"),
    ({**GOOD, "thresholds": {"error_rate": 2}}, "thresholds.error_rate"),
    ({**GOOD, "thresholds": {"latency": 1}}, "thresholds.latency"),
    ({**GOOD, "colour": "red"}, "colour"),
])
async def test_bad_bodies_are_400s_in_openai_shape(admin_http, body, param):
    # Sent as escaped JSON: a lone surrogate ("\ud800") is valid JSON text but no UTF-8.
    r = await admin_http.post("/admin/webhooks", headers={**ADMIN, "content-type": "application/json"},
                              content=json.dumps(body))
    assert_openai_error(r, 400, param=param)
    assert (await admin_http.get("/admin/webhooks", headers=ADMIN)).json()["data"] == []


async def test_unknown_ids_are_404s_and_the_admin_key_is_required(admin_http):
    for method, path in (("GET", "/admin/webhooks/wh_nope"), ("DELETE", "/admin/webhooks/wh_nope"),
                         ("GET", "/admin/webhooks/wh_nope/deliveries"), ("POST", "/admin/webhooks/wh_nope/test")):
        assert_openai_error(await admin_http.request(method, path, headers=ADMIN), 404)
    assert (await admin_http.post("/admin/webhooks", json=GOOD)).status_code == 401


async def test_delete_removes_it_and_its_deliveries(admin_http):
    made = await _create(admin_http)
    await admin_http.post(f"/admin/webhooks/{made['id']}/test", headers=ADMIN)
    r = await admin_http.delete(f"/admin/webhooks/{made['id']}", headers=ADMIN)
    assert r.json() == {"id": made["id"], "object": "webhook", "deleted": True}
    assert (await admin_http.get("/admin/webhooks", headers=ADMIN)).json()["data"] == []
    assert_openai_error(await admin_http.delete(f"/admin/webhooks/{made['id']}", headers=ADMIN), 404)


async def test_a_test_ping_is_queued_and_listed_with_its_state(admin_http):
    made = await _create(admin_http, events=["budget.crossed"])
    r = await admin_http.post(f"/admin/webhooks/{made['id']}/test", headers=ADMIN)
    assert r.status_code == 202
    ping = r.json()
    assert ping["event_type"] == "ping" and ping["status"] == "pending" and ping["attempts"] == 0
    assert ping["id"].startswith("evt_") and ping["next_attempt_at"] and ping["last_error"] is None
    listed = (await admin_http.get(f"/admin/webhooks/{made['id']}/deliveries", headers=ADMIN)).json()["data"]
    assert [d["id"] for d in listed] == [ping["id"]]
    assert (await admin_http.get(f"/admin/webhooks/{made['id']}/deliveries", headers=ADMIN,
                                 params={"status": "failed"})).json()["data"] == []
    assert_openai_error(await admin_http.get(f"/admin/webhooks/{made['id']}/deliveries", headers=ADMIN,
                                             params={"status": "lost"}), 400, param="status")
    assert_openai_error(await admin_http.get(f"/admin/webhooks/{made['id']}/deliveries", headers=ADMIN,
                                             params={"limit": 0}), 400, param="limit")


async def test_changes_are_audited_without_the_secret(admin_http):
    made = await _create(admin_http)
    await admin_http.delete(f"/admin/webhooks/{made['id']}", headers=ADMIN)
    rows = (await admin_http.get("/admin/audit", headers=ADMIN, params={"action": "webhook.*"})).json()["data"]
    assert [r["action"] for r in rows] == ["webhook.delete", "webhook.create"]
    assert rows[1]["target"] == {"type": "webhook", "id": made["id"]} and rows[1]["before"] is None
    assert rows[1]["after"]["url"] == GOOD["url"] and rows[1]["after"]["secret_hint"] == "…cdef"
    assert rows[0]["before"]["id"] == made["id"] and rows[0]["after"] is None
    assert SECRET not in json.dumps(rows)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/hook", "http://[::1]/hook", "http://169.254.169.254/latest",
                                 "http://10.0.0.1/hook", "https://192.168.0.10/x", "http://[fd00::1]/x",
                                 "http://localhost:9000/hook", "http://[::ffff:127.0.0.1]/x"])
async def test_internal_targets_are_refused_and_nothing_is_written(admin_http, url):
    r = await admin_http.post("/admin/webhooks", headers=ADMIN, json={**GOOD, "url": url})
    assert_openai_error(r, 400, param="url")
    assert "may not point at a" in r.json()["error"]["message"]
    assert (await admin_http.get("/admin/webhooks", headers=ADMIN)).json()["data"] == []


async def test_a_public_name_is_created_even_when_it_does_not_resolve_from_here(admin_http):
    for url in ("https://example.com/hooks/tollgate", "https://hooks.example.com:8443/in"):
        assert (await _create(admin_http, url=url))["url"] == url  # no network here: checked at delivery


async def test_allow_private_lets_on_premises_receivers_in(admin_http, data_services):
    data_services.settings = data_services.settings.model_copy(update={"webhooks_allow_private": True})
    assert (await _create(admin_http, url="http://10.0.0.1/hook"))["url"] == "http://10.0.0.1/hook"
