from datetime import UTC, datetime
from decimal import Decimal

import pytest

from gateway.billing.ledger import UsageRecord
from tests.gateway.data_fixtures import ADMIN, assert_openai_error

MODEL = "smollm2-135m-instruct"


async def test_seeded_prices_are_listed_as_current(admin_http):
    r = await admin_http.get("/admin/prices", headers=ADMIN)
    prices = {p["model"]: p for p in r.json()["data"]}
    assert set(prices) == {MODEL, "all-minilm-l6-v2"}
    assert prices[MODEL]["input_per_million"] == "0.1" and prices[MODEL]["current"] is True


async def test_put_adds_a_dated_price_and_costs_follow(admin_http, data_services):
    r = await admin_http.put(f"/admin/prices/{MODEL}", headers=ADMIN, json={
        "input_per_million": "0.123456789", "output_per_million": 2, "cached_input_per_million": "0.01",
        "effective_from": "2026-06-01T00:00:00Z"})
    assert r.status_code == 200
    body = r.json()
    assert (body["input_per_million"], body["output_per_million"], body["cached_output_per_million"]) == (
        "0.123456789", "2", "0")
    assert body["current"] is True
    history = [p for p in (await admin_http.get("/admin/prices", headers=ADMIN)).json()["data"]
               if p["model"] == MODEL]
    assert [p["current"] for p in history] == [False, True]

    # The running PriceBook was reloaded: a June request uses the new price, a May one the old.
    book = data_services.prices
    june = book.cost(MODEL, prompt_tokens=10**6, completion_tokens=0, when=datetime(2026, 6, 2, tzinfo=UTC))
    may = book.cost(MODEL, prompt_tokens=10**6, completion_tokens=0, when=datetime(2026, 5, 2, tzinfo=UTC))
    assert (june, may) == (Decimal("0.123456789"), Decimal("0.1"))


async def test_future_price_is_not_current_yet(admin_http):
    r = await admin_http.put(f"/admin/prices/{MODEL}", headers=ADMIN, json={
        "input_per_million": 1, "output_per_million": 1, "effective_from": "2999-01-01T00:00:00Z"})
    assert r.json()["current"] is False


async def test_default_effective_from_is_now(admin_http, data_services):
    before = datetime.now(UTC)
    r = await admin_http.put(f"/admin/prices/{MODEL}", headers=ADMIN,
                             json={"input_per_million": 7, "output_per_million": 8})
    assert datetime.fromisoformat(r.json()["effective_from"]) >= before
    assert data_services.prices.price_at(MODEL).input_per_million == Decimal(7)


@pytest.mark.parametrize("body,param", [
    ({"output_per_million": 1}, "input_per_million"),
    ({"input_per_million": -1, "output_per_million": 1}, "input_per_million"),
    ({"input_per_million": "0.00000000001", "output_per_million": 1}, "input_per_million"),
    ({"input_per_million": "abc", "output_per_million": 1}, "input_per_million"),
    ({"input_per_million": "NaN", "output_per_million": 1}, "input_per_million"),
    ({"input_per_million": "Infinity", "output_per_million": 1}, "input_per_million"),
    ({"input_per_million": "123456789", "output_per_million": 1}, "input_per_million"),
    ({"input_per_million": 1, "output_per_million": 1, "currency": "EUR"}, "currency"),
    ({"input_per_million": 1, "output_per_million": 1, "effective_from": "soon"}, "effective_from"),
    # Before year 1 in UTC: was a 500 (OverflowError at the database)
    ({"input_per_million": 1, "output_per_million": 1, "effective_from": "0001-01-01T00:00:00+23:59"},
     "effective_from"),
])
async def test_bad_price_bodies_are_400(admin_http, body, param):
    assert_openai_error(await admin_http.put(f"/admin/prices/{MODEL}", headers=ADMIN, json=body), 400,
                        param=param)


async def test_unknown_model_is_404(admin_http):
    r = await admin_http.put("/admin/prices/gpt-17", headers=ADMIN,
                             json={"input_per_million": 1, "output_per_million": 1})
    assert_openai_error(r, 404, code="model_not_found")


async def test_ledger_costs_with_the_price_of_the_request_time(admin_http, data_services):
    tenant = (await admin_http.post("/admin/tenants", headers=ADMIN, json={"name": "acme"})).json()
    await admin_http.put(f"/admin/prices/{MODEL}", headers=ADMIN, json={
        "input_per_million": 1, "output_per_million": 1, "effective_from": "2026-06-01T00:00:00Z"})
    for n, day in ((1, datetime(2026, 5, 31, 23, tzinfo=UTC)), (2, datetime(2026, 6, 1, tzinfo=UTC))):
        data_services.ledger.record(UsageRecord(request_id=f"r{n}", tenant_id=tenant["id"], key_id=None,
                                                endpoint="/v1/completions", model=MODEL,
                                                prompt_tokens=10**6, created_at=day))
    await data_services.ledger.flush()
    may = (await admin_http.get(f"/admin/tenants/{tenant['id']}/bill?month=2026-05", headers=ADMIN)).json()
    june = (await admin_http.get(f"/admin/tenants/{tenant['id']}/bill?month=2026-06", headers=ADMIN)).json()
    assert (may["total_cost"], june["total_cost"]) == ("0.1", "1")


async def test_largest_price_round_trips_exactly(admin_http):
    big = "99999999.9999999999"
    r = await admin_http.put(f"/admin/prices/{MODEL}", headers=ADMIN,
                             json={"input_per_million": big, "output_per_million": big})
    assert r.status_code == 200 and r.json()["input_per_million"] == big
