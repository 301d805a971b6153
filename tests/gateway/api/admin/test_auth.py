import pytest

from tests.gateway.data_fixtures import ADMIN, TEST_ADMIN_KEY, assert_openai_error, bearer, new_tenant_key

ROUTES = [("GET", "/admin/tenants"), ("POST", "/admin/tenants"), ("GET", "/admin/tenants/x"),
          ("PATCH", "/admin/tenants/x"), ("POST", "/admin/tenants/x/keys"), ("GET", "/admin/tenants/x/keys"),
          ("DELETE", "/admin/keys/x"), ("GET", "/admin/prices"), ("PUT", "/admin/prices/m"),
          ("GET", "/admin/tenants/x/bill"), ("GET", "/admin/bills"), ("GET", "/admin/usage.csv")]


@pytest.mark.parametrize("method,path", ROUTES)
async def test_every_admin_route_needs_the_admin_key(admin_http, method, path):
    _, key = await new_tenant_key(admin_http, "acme")
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic abc"},
                    bearer(key["key"]), bearer(TEST_ADMIN_KEY.upper()), bearer(TEST_ADMIN_KEY[:-1])):
        resp = await admin_http.request(method, path, headers=headers, json={})
        assert_openai_error(resp, 401, code="invalid_api_key")


async def test_admin_key_is_not_a_tenant_key(admin_http):
    resp = await admin_http.get("/v1/usage", headers=ADMIN)
    assert_openai_error(resp, 401, code="invalid_api_key")


async def test_scheme_is_case_insensitive(admin_http):
    resp = await admin_http.get("/admin/tenants", headers={"Authorization": f"bearer {TEST_ADMIN_KEY}"})
    assert resp.status_code == 200
