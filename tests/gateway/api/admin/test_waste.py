"""GET /admin/tenants/{id}/waste: the share of a tenant's engine input its prefix cache already held and the
tokens semantic-cache hits spared, per model and month; other tenants and months never count."""
from datetime import UTC, datetime

from gateway.billing.ledger import UsageRecord
from tests.gateway.data_fixtures import ADMIN, assert_openai_error, new_tenant_key

MODEL, EMBED = "smollm2-135m-instruct", "all-minilm-l6-v2"


def _row(tenant, n, *, model=MODEL, prompt=0, completion=0, cached=0, hit=False, month=11):
    return UsageRecord(request_id=f"{tenant[:8]}-{n}", tenant_id=tenant, key_id=None, endpoint="/v1/chat/completions",
                       model=model, prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached,
                       cache_hit=hit, created_at=datetime(2026, month, 5, tzinfo=UTC))


async def test_waste_report(admin_http, data_services):
    a, _ = await new_tenant_key(admin_http, "wasteful")
    b, _ = await new_tenant_key(admin_http, "other")
    ledger = data_services.ledger
    for rec in [_row(a, 1, prompt=1000, completion=50, cached=600),  # a repeated system prompt: 600 held
                _row(a, 2, prompt=500, completion=50),
                _row(a, 3, prompt=7, completion=15, cached=7, hit=True),  # a semantic-cache hit
                _row(a, 4, model=EMBED, prompt=100),
                _row(a, 5, prompt=999, cached=999, month=10),  # another month
                _row(b, 1, prompt=1000, cached=1000)]:  # another tenant
        ledger.record(rec)
    await ledger.flush()
    r = await admin_http.get(f"/admin/tenants/{a}/waste?month=2026-11", headers=ADMIN)
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["object"], body["tenant_id"], body["month"]) == ("waste_report", a, "2026-11")
    assert (body["input_tokens"], body["prefix_cached_tokens"], body["semantic_cache_hits"],
            body["semantic_cache_tokens_saved"]) == (1607, 600, 1, 22)
    assert body["repeated_input_share"] == round(600 / 1600, 6)
    assert body["models"] == [
        {"model": EMBED, "input_tokens": 100, "engine_requests": 1, "engine_input_tokens": 100,
         "prefix_cached_tokens": 0, "repeated_input_share": 0.0, "semantic_cache_hits": 0,
         "semantic_cache_tokens_saved": 0},
        {"model": MODEL, "input_tokens": 1507, "engine_requests": 2, "engine_input_tokens": 1500,
         "prefix_cached_tokens": 600, "repeated_input_share": 0.4, "semantic_cache_hits": 1,
         "semantic_cache_tokens_saved": 22}]
    empty = (await admin_http.get(f"/admin/tenants/{a}/waste?month=2026-09", headers=ADMIN)).json()
    assert (empty["input_tokens"], empty["repeated_input_share"], empty["models"]) == (0, 0.0, [])


async def test_waste_needs_a_tenant_a_month_and_the_admin_key(admin_http):
    a, key = await new_tenant_key(admin_http, "w")
    assert_openai_error(await admin_http.get("/admin/tenants/nope/waste", headers=ADMIN), 404)
    assert_openai_error(await admin_http.get(f"/admin/tenants/{a}/waste?month=11-2026", headers=ADMIN), 400,
                        param="month")
    r = await admin_http.get(f"/admin/tenants/{a}/waste", headers={"Authorization": f"Bearer {key['key']}"})
    assert r.status_code in (401, 403)
