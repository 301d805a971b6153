import csv
import io
from datetime import UTC, datetime

import pytest

from gateway.billing.ledger import UsageRecord
from tests.gateway.data_fixtures import ADMIN, assert_openai_error, new_tenant_key

MODEL = "smollm2-135m-instruct"


def usage(tenant_id: str, key_id: str, n: int, *, model: str = MODEL, day: int = 10, **kw) -> UsageRecord:
    fields = {"prompt_tokens": 1000, "completion_tokens": 100, **kw}
    return UsageRecord(request_id=f"{tenant_id}-{n}", tenant_id=tenant_id, key_id=key_id,
                       endpoint="/v1/chat/completions", model=model,
                       created_at=datetime(2026, 11, day, tzinfo=UTC), **fields)


@pytest.fixture
async def billed(admin_http, data_services):
    a, ka = await new_tenant_key(admin_http, "a")
    b, kb = await new_tenant_key(admin_http, "b")
    ledger = data_services.ledger
    ledger.record(usage(a, ka["id"], 1))
    ledger.record(usage(a, ka["id"], 2, cached_tokens=1000))
    ledger.record(usage(a, ka["id"], 3, model="all-minilm-l6-v2", completion_tokens=0))
    ledger.record(usage(b, kb["id"], 1, day=30))
    ledger.record(usage(b, kb["id"], 2, day=1, status="error", prompt_tokens=0, completion_tokens=0))
    ledger.record(UsageRecord(request_id="october", tenant_id=b, key_id=kb["id"], endpoint="/v1/x",
                              model=MODEL, prompt_tokens=5, created_at=datetime(2026, 10, 31, tzinfo=UTC)))
    await ledger.flush()
    return a, b


async def test_tenant_bill(admin_http, billed):
    a, _ = billed
    r = await admin_http.get(f"/admin/tenants/{a}/bill?month=2026-11", headers=ADMIN)
    assert r.status_code == 200
    bill = r.json()
    assert set(bill) == {"tenant_id", "month", "lines", "total_cost", "currency", "cache_accuracy",
                         "requests_clamped", "tokens_saved_by_cap"}
    assert (bill["tenant_id"], bill["month"], bill["currency"]) == (a, "2026-11", "USD")
    assert bill["lines"] == [
        {"model": "all-minilm-l6-v2", "kind": "interactive", "tier": 1, "requests": 1, "prompt_tokens": 1000,
         "completion_tokens": 0, "cached_tokens": 0, "cost": "0.00001"},
        # 1000 at 0.1 + 2 x 100 at 0.3 (the cached 1000 are free): 0.0001 + 0.00006
        {"model": MODEL, "kind": "interactive", "tier": 1, "requests": 2, "prompt_tokens": 2000,
         "completion_tokens": 200, "cached_tokens": 1000, "cost": "0.00016"}]
    assert bill["total_cost"] == "0.00017"


async def test_all_bills(admin_http, billed):
    a, b = billed
    r = await admin_http.get("/admin/bills?month=2026-11", headers=ADMIN)
    body = r.json()
    assert body["object"] == "list" and body["month"] == "2026-11"
    totals = {x["tenant_id"]: x["total_cost"] for x in body["data"]}
    assert totals == {a: "0.00017", b: "0.00013"}
    oct_ = (await admin_http.get("/admin/bills?month=2026-10", headers=ADMIN)).json()
    assert {x["tenant_id"]: x["total_cost"] for x in oct_["data"]} == {a: "0", b: "0.0000005"}


async def test_usage_csv(admin_http, billed):
    a, b = billed
    r = await admin_http.get("/admin/usage.csv?month=2026-11", headers=ADMIN)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert "usage-2026-11.csv" in r.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert len(rows) == 5 and {row["tenant_id"] for row in rows} == {a, b}
    assert rows[0]["status"] == "error" and rows[0]["cost"] == "0"
    only_a = list(csv.DictReader(io.StringIO(
        (await admin_http.get(f"/admin/usage.csv?month=2026-11&tenant_id={a}", headers=ADMIN)).text)))
    assert len(only_a) == 3


async def test_batch_lines_are_their_own_bill_line_at_the_batch_discount(admin_http, data_services):
    a, ka = await new_tenant_key(admin_http, "a")
    ledger = data_services.ledger
    ledger.record(usage(a, ka["id"], 1))
    ledger.record(usage(a, ka["id"], 2, kind="batch"))
    ledger.record(usage(a, ka["id"], 3, kind="batch", prompt_tokens=7, completion_tokens=3))
    await ledger.flush()
    bill = (await admin_http.get(f"/admin/tenants/{a}/bill?month=2026-11", headers=ADMIN)).json()
    # 1000 at 0.1 + 100 at 0.3 per million = 0.00013 interactive; the catalogue's default discount halves it.
    # 7 at 0.1 + 3 at 0.3 = 0.0000016, halved: exact, no float on the way.
    assert bill["lines"] == [
        {"model": MODEL, "kind": "interactive", "tier": 1, "requests": 1, "prompt_tokens": 1000,
         "completion_tokens": 100, "cached_tokens": 0, "cost": "0.00013"},
        {"model": MODEL, "kind": "batch", "tier": 1, "requests": 2, "prompt_tokens": 1007, "completion_tokens": 103,
         "cached_tokens": 0, "cost": "0.0000658"}]
    assert bill["total_cost"] == "0.0001958"
    rows = list(csv.DictReader(io.StringIO(
        (await admin_http.get(f"/admin/usage.csv?month=2026-11&tenant_id={a}", headers=ADMIN)).text)))
    assert [row["kind"] for row in rows] == ["interactive", "batch", "batch"]
    assert [row["cost"] for row in rows] == ["0.00013", "0.000065", "0.0000008"]


@pytest.mark.parametrize("month", ["2026-13", "nov", "2026-1", "2026-11-01", ""])
async def test_bad_month_is_400(admin_http, billed, month):
    a, _ = billed
    for path in (f"/admin/tenants/{a}/bill", "/admin/bills", "/admin/usage.csv"):
        assert_openai_error(await admin_http.get(path, params={"month": month}, headers=ADMIN), 400,
                            param="month")


async def test_unknown_tenant_bill_is_404(admin_http):
    assert_openai_error(await admin_http.get("/admin/tenants/nope/bill?month=2026-11", headers=ADMIN), 404)


async def test_month_defaults_to_this_one(admin_http):
    a, _ = await new_tenant_key(admin_http, "a")
    r = await admin_http.get(f"/admin/tenants/{a}/bill", headers=ADMIN)
    assert r.json()["month"] == datetime.now(UTC).strftime("%Y-%m")
