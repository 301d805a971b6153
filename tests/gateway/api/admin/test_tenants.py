import pytest

from tests.gateway.data_fixtures import ADMIN, assert_openai_error, bearer, new_tenant_key


async def test_create_list_read_update(admin_http):
    r = await admin_http.post("/admin/tenants", headers=ADMIN, json={
        "name": "acme", "rpm": 60, "tpm": 10000, "monthly_token_budget": 1000000,
        "cache_threshold": 0.92, "cache_ttl_s": 3600, "cache_max_entries": 500})
    assert r.status_code == 201
    t = r.json()
    assert t["id"] and t["status"] == "active" and t["rpm"] == 60 and t["cache_threshold"] == 0.92
    assert t["cache_enabled"] is True and t["cache_allow_sampling"] is False

    r = await admin_http.get("/admin/tenants", headers=ADMIN)
    assert r.json()["object"] == "list" and [x["name"] for x in r.json()["data"]] == ["acme"]
    assert (await admin_http.get(f"/admin/tenants/{t['id']}", headers=ADMIN)).json() == t

    r = await admin_http.patch(f"/admin/tenants/{t['id']}", headers=ADMIN, json={
        "rpm": None, "tpm": 5, "cache_allow_sampling": True, "cache_threshold": 1})
    assert r.status_code == 200
    got = r.json()
    assert (got["rpm"], got["tpm"], got["cache_allow_sampling"], got["cache_threshold"]) == (None, 5, True, 1.0)
    assert got["monthly_token_budget"] == 1000000  # untouched


async def test_defaults_are_unlimited(admin_http):
    r = await admin_http.post("/admin/tenants", headers=ADMIN, json={"name": "plain"})
    t = r.json()
    assert (t["rpm"], t["tpm"], t["monthly_token_budget"], t["cache_threshold"]) == (None, None, None, None)


async def test_duplicate_name_is_a_conflict(admin_http):
    await admin_http.post("/admin/tenants", headers=ADMIN, json={"name": "acme"})
    r = await admin_http.post("/admin/tenants", headers=ADMIN, json={"name": "acme"})
    assert_openai_error(r, 409, param="name", code="tenant_exists")
    other = (await admin_http.post("/admin/tenants", headers=ADMIN, json={"name": "other"})).json()
    r = await admin_http.patch(f"/admin/tenants/{other['id']}", headers=ADMIN, json={"name": "acme"})
    assert_openai_error(r, 409, param="name")


@pytest.mark.parametrize("body,param", [
    ({}, "name"),
    ({"name": ""}, "name"),
    ({"name": "  padded "}, "name"),
    ({"name": "a\x00b"}, "name"),  # PostgreSQL refuses NUL in text: a 500 there before
    ({"name": "a", "surprise": 1}, "surprise"),
    ({"name": "a", "rpm": 0}, "rpm"),
    ({"name": "a", "tpm": "lots"}, "tpm"),
    ({"name": "a", "monthly_token_budget": -1}, "monthly_token_budget"),
    ({"name": "a", "monthly_token_budget": 2**63}, "monthly_token_budget"),
    ({"name": "a", "rpm": 2**31}, "rpm"),
    ({"name": "a", "cache_threshold": 0}, "cache_threshold"),
    ({"name": "a", "cache_threshold": 1.01}, "cache_threshold"),
    ({"name": "a", "cache_ttl_s": -1}, "cache_ttl_s"),
    ({"name": "a", "cache_max_entries": -5}, "cache_max_entries"),
    ({"name": "a", "priority": 1001}, "priority"),
    ({"name": "a", "share_weight": 0}, "share_weight"),
])
async def test_bad_create_bodies_are_400_naming_the_field(admin_http, body, param):
    r = await admin_http.post("/admin/tenants", headers=ADMIN, json=body)
    assert_openai_error(r, 400, param=param)


@pytest.mark.parametrize("body,param", [
    ({"cache_threshold": -0.5}, "cache_threshold"),
    ({"cache_ttl_s": -1}, "cache_ttl_s"),
    ({"cache_max_entries": -1}, "cache_max_entries"),
    ({"priority": None}, "priority"),
    ({"share_weight": None}, "share_weight"),
    ({"status": "paused"}, "status"),
    ({"id": "new-id"}, "id"),
    ({"name": "a\x00b"}, "name"),
])
async def test_bad_updates_are_400_naming_the_field(admin_http, body, param):
    t = (await admin_http.post("/admin/tenants", headers=ADMIN, json={"name": "acme"})).json()
    r = await admin_http.patch(f"/admin/tenants/{t['id']}", headers=ADMIN, json=body)
    assert_openai_error(r, 400, param=param)


@pytest.mark.parametrize("field", ["name", "status", "cache_enabled"])
async def test_required_fields_cannot_be_nulled(admin_http, field):
    t = (await admin_http.post("/admin/tenants", headers=ADMIN, json={"name": "acme"})).json()
    r = await admin_http.patch(f"/admin/tenants/{t['id']}", headers=ADMIN, json={field: None})
    assert_openai_error(r, 400)


async def test_unknown_tenant_is_404(admin_http):
    assert_openai_error(await admin_http.get("/admin/tenants/nope", headers=ADMIN), 404)
    assert_openai_error(await admin_http.patch("/admin/tenants/nope", headers=ADMIN, json={"rpm": 1}), 404)


async def test_malformed_json_is_400(admin_http):
    r = await admin_http.post("/admin/tenants", headers={**ADMIN, "Content-Type": "application/json"},
                              content=b"{not json")
    error = assert_openai_error(r, 400)
    assert error["param"] is None and "could not parse the JSON body" in error["message"]  # not param "0"


async def test_disabling_a_tenant_locks_its_keys_out_at_once(admin_http):
    tenant_id, key = await new_tenant_key(admin_http, "acme")
    assert (await admin_http.get("/v1/usage", headers=bearer(key["key"]))).status_code == 200
    await admin_http.patch(f"/admin/tenants/{tenant_id}", headers=ADMIN, json={"status": "disabled"})
    assert_openai_error(await admin_http.get("/v1/usage", headers=bearer(key["key"])), 401,
                        code="invalid_api_key")
    await admin_http.patch(f"/admin/tenants/{tenant_id}", headers=ADMIN, json={"status": "active"})
    assert (await admin_http.get("/v1/usage", headers=bearer(key["key"]))).status_code == 200


async def test_budgets_beyond_32_bits(admin_http):
    r = await admin_http.post("/admin/tenants", headers=ADMIN, json={"name": "big", "monthly_token_budget": 10**12})
    assert r.status_code == 201
    assert (await admin_http.get(f"/admin/tenants/{r.json()['id']}", headers=ADMIN)).json()[
        "monthly_token_budget"] == 10**12


async def test_a_scheduling_plan_is_set_and_changed(admin_http):
    r = await admin_http.post("/admin/tenants", headers=ADMIN, json={"name": "batchy", "priority": 10,
                                                                      "share_weight": 0.5})
    t = r.json()
    assert r.status_code == 201 and (t["priority"], t["share_weight"]) == (10, 0.5)
    plain = (await admin_http.post("/admin/tenants", headers=ADMIN, json={"name": "plain"})).json()
    assert (plain["priority"], plain["share_weight"]) == (0, 1.0)
    r = await admin_http.patch(f"/admin/tenants/{t['id']}", headers=ADMIN, json={"priority": -2})
    assert r.json()["priority"] == -2 and r.json()["share_weight"] == 0.5


async def test_a_plan_is_set_changed_and_cleared(admin_http):
    r = await admin_http.post("/admin/tenants", headers=ADMIN, json={"name": "planned", "plan": "free"})
    t = r.json()
    assert r.status_code == 201 and t["plan"] == "free"
    assert (await admin_http.post("/admin/tenants", headers=ADMIN, json={"name": "no-plan"})).json()["plan"] is None
    r = await admin_http.patch(f"/admin/tenants/{t['id']}", headers=ADMIN, json={"plan": "pro"})
    assert r.json()["plan"] == "pro"
    r = await admin_http.patch(f"/admin/tenants/{t['id']}", headers=ADMIN, json={"plan": None})
    assert r.status_code == 200 and r.json()["plan"] is None
    r = await admin_http.patch(f"/admin/tenants/{t['id']}", headers=ADMIN, json={"plan": ""})
    assert_openai_error(r, 400, param="plan")
