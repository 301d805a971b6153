from datetime import UTC, datetime, timedelta

import pytest

from tests.gateway.data_fixtures import ADMIN, assert_openai_error, bearer, new_tenant_key


async def test_create_list_revoke(admin_http):
    tenant_id, created = await new_tenant_key(admin_http, "acme", models=["chat"], rpm=5, tpm=100)
    assert created["key"].startswith("tg-") and created["prefix"] == created["key"][:12]
    assert (created["models"], created["rpm"], created["tpm"], created["revoked_at"]) == (["chat"], 5, 100, None)
    assert (await admin_http.get("/v1/usage", headers=bearer(created["key"]))).status_code == 200

    r = await admin_http.get(f"/admin/tenants/{tenant_id}/keys", headers=ADMIN)
    [listed] = r.json()["data"]
    assert "key" not in listed and "key_hash" not in listed
    assert created["key"] not in r.text and listed["id"] == created["id"]
    assert listed["last_used_at"] is not None

    r = await admin_http.delete(f"/admin/keys/{created['id']}", headers=ADMIN)
    assert r.status_code == 200 and r.json()["revoked_at"] is not None
    assert_openai_error(await admin_http.get("/v1/usage", headers=bearer(created["key"])), 401,
                        code="invalid_api_key")
    again = await admin_http.delete(f"/admin/keys/{created['id']}", headers=ADMIN)
    assert again.json()["revoked_at"] == r.json()["revoked_at"]  # idempotent


async def test_expiring_key(admin_http):
    soon = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    _, created = await new_tenant_key(admin_http, "acme", expires_at=soon)
    assert datetime.fromisoformat(created["expires_at"]) == datetime.fromisoformat(soon)


@pytest.mark.parametrize("body,param", [
    ({"models": ["no-such-model"]}, "models"),
    ({"models": []}, "models"),
    ({"expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
    ({"expires_at": "tomorrow"}, "expires_at"),
    ({"expires_at": "9999-12-31T23:59:59-23:59"}, "expires_at"),  # past year 9999 in UTC: was a 500
    ({"rpm": 0}, "rpm"),
    ({"tenant_id": "someone-else"}, "tenant_id"),
])
async def test_bad_key_bodies_are_400(admin_http, body, param):
    tenant_id, _ = await new_tenant_key(admin_http, "acme")
    r = await admin_http.post(f"/admin/tenants/{tenant_id}/keys", headers=ADMIN, json=body)
    assert_openai_error(r, 400, param=param)


async def test_catalogue_names_are_accepted(admin_http):
    _, created = await new_tenant_key(admin_http, "acme", models=[
        "chat", "smollm2-135m-instruct", "smollm2-135m-instruct@bf16", "all-minilm-l6-v2"])
    assert len(created["models"]) == 4


async def test_unknown_tenant_or_key_is_404(admin_http):
    assert_openai_error(await admin_http.post("/admin/tenants/nope/keys", headers=ADMIN, json={}), 404)
    assert_openai_error(await admin_http.get("/admin/tenants/nope/keys", headers=ADMIN), 404)
    assert_openai_error(await admin_http.delete("/admin/keys/nope", headers=ADMIN), 404)
