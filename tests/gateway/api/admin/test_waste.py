"""GET /admin/tenants/{id}/waste: the share of a tenant's engine input its prefix cache already held and the
tokens semantic-cache hits spared, per model and month; other tenants and months never count."""
from datetime import UTC, datetime

from gateway.billing.ledger import UsageRecord
from gateway.billing.prefix_recorder import Observed, PrefixRecorder
from tests.gateway.data_fixtures import ADMIN, assert_openai_error, new_tenant_key

MODEL, EMBED = "smollm2-135m-instruct", "all-minilm-l6-v2"


def _row(tenant, n, *, model=MODEL, prompt=0, completion=0, cached=0, hit=False, month=11,
         endpoint="/v1/chat/completions"):
    return UsageRecord(request_id=f"{tenant[:8]}-{n}", tenant_id=tenant, key_id=None, endpoint=endpoint,
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


async def test_the_report_carries_the_gateways_hashing(admin_http, data_services):
    """The repeated share from the gateway's own hashing beside the engine's, and the most repeated prompts; a
    tenant's prompts appear in its own report only."""
    a, _ = await new_tenant_key(admin_http, "repeats")
    b, _ = await new_tenant_key(admin_http, "elsewhere")
    system = {"role": "system", "content": "You answer questions about invoices."}
    recorder = PrefixRecorder(data_services.database, count=lambda version, messages: 8)
    sent = [(a, "Why was I charged twice?", 20), (a, "Why was I charged twice?", 20), (a, "Refund please", 14),
            (b, "B's private question", 30), (b, "B's private question", 30)]
    for n, (tenant, question, tokens) in enumerate(sent):
        data_services.ledger.record(_row(tenant, 100 + n, prompt=tokens, completion=5))
        recorder.observe(Observed(tenant_id=tenant, at=datetime(2026, 11, 6, tzinfo=UTC), prompt_tokens=tokens,
                                  version="v", prompt=None,
                                  messages=[system, {"role": "user", "content": question}]))
    # Embeddings send no prompt to repeat: not in the hashed input.
    data_services.ledger.record(_row(a, 200, model=EMBED, prompt=1000, endpoint="/v1/embeddings"))
    await data_services.ledger.flush()
    await recorder.flush()

    body = (await admin_http.get(f"/admin/tenants/{a}/waste?month=2026-11", headers=ADMIN)).json()
    # The second request repeats its whole prompt (20), the third the system prompt (8).
    assert (body["hashed_input_tokens"], body["hashed_repeated_tokens"], body["distinct_prefixes"]) == (54, 28, 3)
    assert body["hashed_repeated_share"] == round(28 / 54, 6)
    assert body["repeated_input_share"] == 0.0  # the engine's prefix cache held nothing: a separate figure
    day = "2026-11-06T00:00:00Z"
    assert body["longest_repeated"] == [  # by tokens x repeats: 20 x 1, then 8 x 2
        {"kind": "prompt", "tokens": 20, "times_seen": 2, "repeated_tokens": 20, "first_seen": day,
         "last_seen": day, "preview": "Why was I charged twice?"},
        {"kind": "system", "tokens": 8, "times_seen": 3, "repeated_tokens": 16, "first_seen": day,
         "last_seen": day, "preview": system["content"]}]
    other = (await admin_http.get(f"/admin/tenants/{b}/waste?month=2026-11", headers=ADMIN)).json()
    # The same system prompt was new to b: only its own second request repeats (its whole prompt).
    assert (other["hashed_input_tokens"], other["hashed_repeated_tokens"]) == (60, 30)
    assert [p["preview"] for p in other["longest_repeated"]] == ["B's private question", system["content"]]
    assert "charged twice" not in str(other) and "private" not in str(body)
