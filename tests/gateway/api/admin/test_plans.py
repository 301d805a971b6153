"""The plan settings' admin shapes: PATCH /admin/tenants/{id} output caps, a key's own caps, and PUT
/admin/prices/{model} volume tiers; every bad body a 400 in the API's error shape."""
import pytest

from tests.gateway.data_fixtures import ADMIN, assert_openai_error, new_tenant_key

MODEL = "smollm2-135m-instruct"


async def test_patch_sets_and_clears_output_caps(admin_http):
    tenant, _ = await new_tenant_key(admin_http, "capped")
    r = await admin_http.patch(f"/admin/tenants/{tenant}", headers=ADMIN, json={
        "max_output_tokens": 64, "default_max_tokens": 16, "output_cap_mode": "clamp"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["max_output_tokens"], body["default_max_tokens"], body["output_cap_mode"]) == (64, 16, "clamp")
    r = await admin_http.patch(f"/admin/tenants/{tenant}", headers=ADMIN,
                               json={"max_output_tokens": None, "default_max_tokens": None})
    body = r.json()
    assert (body["max_output_tokens"], body["default_max_tokens"], body["output_cap_mode"]) == (None, None, "clamp")
    fresh = (await admin_http.get(f"/admin/tenants/{tenant}", headers=ADMIN)).json()
    assert fresh["output_cap_mode"] == "clamp"


@pytest.mark.parametrize("body,param", [
    ({"output_cap_mode": "truncate"}, "output_cap_mode"),
    ({"output_cap_mode": None}, "output_cap_mode"),
    ({"max_output_tokens": 0}, "max_output_tokens"),
    ({"default_max_tokens": -1}, "default_max_tokens"),
    ({"max_output_tokens": 8, "default_max_tokens": 16}, None),
])
async def test_bad_caps_are_400(admin_http, body, param):
    tenant, _ = await new_tenant_key(admin_http, "bad-caps")
    assert_openai_error(await admin_http.patch(f"/admin/tenants/{tenant}", headers=ADMIN, json=body), 400,
                        param=param)


async def test_a_default_above_the_kept_cap_is_refused(admin_http):
    tenant, _ = await new_tenant_key(admin_http, "kept-cap")
    await admin_http.patch(f"/admin/tenants/{tenant}", headers=ADMIN, json={"max_output_tokens": 32})
    error = assert_openai_error(await admin_http.patch(f"/admin/tenants/{tenant}", headers=ADMIN,
                                                       json={"default_max_tokens": 64}), 400,
                                param="default_max_tokens")
    assert "32" in error["message"]


async def test_a_key_carries_its_own_caps(admin_http):
    _, key = await new_tenant_key(admin_http, "key-caps", max_output_tokens=100, default_max_tokens=10)
    assert (key["max_output_tokens"], key["default_max_tokens"]) == (100, 10)
    tenant, _ = await new_tenant_key(admin_http, "key-caps-bad")
    r = await admin_http.post(f"/admin/tenants/{tenant}/keys", headers=ADMIN,
                              json={"max_output_tokens": 10, "default_max_tokens": 20})
    assert_openai_error(r, 400)


TIERS = [{"up_to": 100_000_000, "input_per_million": "0.2", "output_per_million": "0.8"},
         {"up_to": None, "input_per_million": "0.1", "output_per_million": "0.4"}]


async def test_put_price_with_tiers_and_list_them(admin_http):
    r = await admin_http.put(f"/admin/prices/{MODEL}", headers=ADMIN, json={
        "input_per_million": "0.2", "output_per_million": "0.8", "tiers": TIERS})
    assert r.status_code == 200, r.text
    assert r.json()["tiers"] == TIERS and r.json()["current"]
    listed = [p for p in (await admin_http.get("/admin/prices", headers=ADMIN)).json()["data"]
              if p["model"] == MODEL and p["current"]]
    assert listed[0]["tiers"] == TIERS
    # A price without tiers is flat again.
    r = await admin_http.put(f"/admin/prices/{MODEL}", headers=ADMIN,
                             json={"input_per_million": "0.2", "output_per_million": "0.8"})
    assert r.json()["tiers"] is None


@pytest.mark.parametrize("tiers", [
    [],
    [{**TIERS[0], "input_per_million": "0.3"}, TIERS[1]],  # the first tier is not the flat price
    [TIERS[0], {**TIERS[1], "up_to": 5}],  # descending, and the last has an end
    [{**TIERS[0], "up_to": None}, TIERS[1]],  # only the last may be open-ended
    [TIERS[0], TIERS[0], TIERS[1]],  # not ascending
    [{**TIERS[0], "up_to": 0}, TIERS[1]],
    [{**TIERS[0], "cached_input_per_million": "1"}, TIERS[1]],  # unknown field
])
async def test_bad_tiers_are_400(admin_http, tiers):
    r = await admin_http.put(f"/admin/prices/{MODEL}", headers=ADMIN, json={
        "input_per_million": "0.2", "output_per_million": "0.8", "tiers": tiers})
    assert_openai_error(r, 400)
