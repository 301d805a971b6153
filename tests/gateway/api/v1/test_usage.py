"""GET /v1/usage: a tenant sees its own usage and nobody else's."""
from datetime import UTC, datetime

import pytest

from gateway.billing.ledger import UsageRecord
from tests.gateway.data_fixtures import (  # noqa: F401
    ADMIN, admin_http, assert_openai_error, bearer, data_app, data_services, database, db_url,
    deploy_catalogue, new_tenant_key, pg_url, sqlite_url)

MODEL = "smollm2-135m-instruct"


@pytest.fixture
async def two_tenants(admin_http, data_services):
    a, ka = await new_tenant_key(admin_http, "a")
    b, kb = await new_tenant_key(admin_http, "b")
    for n, (tenant, key, day) in enumerate([(a, ka, 3), (a, ka, 20), (b, kb, 3)]):
        data_services.ledger.record(UsageRecord(
            request_id=f"r{n}", tenant_id=tenant, key_id=key["id"], endpoint="/v1/completions",
            model=MODEL, prompt_tokens=10, completion_tokens=1, created_at=datetime(2026, 11, day, tzinfo=UTC)))
    await data_services.ledger.flush()
    return (a, ka["key"]), (b, kb["key"])


async def test_own_usage_only(admin_http, two_tenants):
    (a, key_a), (b, key_b) = two_tenants
    ra = (await admin_http.get("/v1/usage?month=2026-11", headers=bearer(key_a))).json()
    rb = (await admin_http.get("/v1/usage?month=2026-11", headers=bearer(key_b))).json()
    assert ra["tenant_id"] == a and ra["lines"][0]["requests"] == 2
    assert rb["tenant_id"] == b and rb["lines"][0]["requests"] == 1
    assert ra["start"] == "2026-11-01T00:00:00+00:00" and ra["end"] == "2026-12-01T00:00:00+00:00"
    assert ra["total_cost"] == "0.0000026" and ra["currency"] == "USD"
    # There is no parameter that selects another tenant.
    sneaky = await admin_http.get(f"/v1/usage?month=2026-11&tenant_id={b}", headers=bearer(key_a))
    assert sneaky.json()["tenant_id"] == a


async def test_date_range_is_inclusive(admin_http, two_tenants):
    (_, key_a), _ = two_tenants
    r = (await admin_http.get("/v1/usage?start=2026-11-01&end=2026-11-03", headers=bearer(key_a))).json()
    assert r["lines"][0]["requests"] == 1 and r["end"] == "2026-11-04T00:00:00+00:00"
    r = (await admin_http.get("/v1/usage?start=2026-11-04&end=2026-11-30", headers=bearer(key_a))).json()
    assert r["lines"][0]["requests"] == 1


@pytest.mark.parametrize("query,param", [
    ("month=11-2026", "month"), ("start=2026-11-01", "end"), ("end=2026-11-01", "start"),
    ("start=2026-11-05&end=2026-11-01", "end"), ("start=yesterday&end=2026-11-01", "start"),
    ("month=2026-11&start=2026-11-01&end=2026-11-02", "month"), ("start=0001-01-01&end=9999-12-31", "end"),
    ("month=9999-12", "month")])
async def test_bad_periods_are_400(admin_http, two_tenants, query, param):
    (_, key_a), _ = two_tenants
    assert_openai_error(await admin_http.get(f"/v1/usage?{query}", headers=bearer(key_a)), 400, param=param)


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer tg-nope"}, {"Authorization": "tg-x"}])
async def test_needs_a_valid_key(admin_http, headers):
    assert_openai_error(await admin_http.get("/v1/usage", headers=headers), 401, code="invalid_api_key")
