"""Reserved throughput's admin shapes and its bill lines: POST/GET/DELETE /admin/tenants/{id}/reservations, the
409 naming the capacity, and a bill's reservation_fee line (prorated fee, the tokens it covered) beside usage
lines that bill only the tokens over it."""
import asyncio
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from gateway.billing.ledger import UsageRecord
from gateway.billing.reservation_fees import prorated_fee
from gateway.db.models.reservation import Reservation
from gateway.db.types import utcnow
from gateway.domain.period import Month
from tests.gateway.data_fixtures import ADMIN, assert_openai_error, new_tenant_key

MODEL = "smollm2-135m-instruct"
CAPACITY = 261.0  # deploy/catalogue.yaml: the fp32 version's benchmark figure x its one warm replica


def url(tenant: str, rid: str = "") -> str:
    return f"/admin/tenants/{tenant}/reservations" + (f"/{rid}" if rid else "")


async def reserve(admin_http, tenant, rate, fee="100"):
    return await admin_http.post(url(tenant), headers=ADMIN,
                                 json={"model": MODEL, "output_tokens_per_s": rate, "monthly_fee": fee})


async def test_a_small_reservation_is_accepted_on_a_fresh_server_and_listed_and_ended(admin_http):
    tenant, _ = await new_tenant_key(admin_http, "res")
    r = await reserve(admin_http, tenant, 1)
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["object"], body["tenant_id"], body["model"], body["output_tokens_per_s"], body["monthly_fee"],
            body["ended_at"]) == ("reservation", tenant, MODEL, 1.0, "100", None)
    listed = (await admin_http.get(url(tenant), headers=ADMIN)).json()
    assert [x["id"] for x in listed["data"]] == [body["id"]]
    ended = await admin_http.delete(url(tenant, body["id"]), headers=ADMIN)
    assert ended.status_code == 200 and ended.json()["ended_at"] is not None
    again = await admin_http.delete(url(tenant, body["id"]), headers=ADMIN)
    assert again.json()["ended_at"] == ended.json()["ended_at"]


async def test_over_capacity_is_409_with_the_figures(admin_http):
    a, _ = await new_tenant_key(admin_http, "big-a")
    b, _ = await new_tenant_key(admin_http, "big-b")
    assert (await reserve(admin_http, a, 200)).status_code == 201
    r = await reserve(admin_http, b, 100)
    assert r.status_code == 409
    error = r.json()["error"]
    assert (error["code"], error["param"]) == ("over_capacity", "output_tokens_per_s")
    assert (error["capacity_tokens_per_s"], error["reserved_tokens_per_s"], error["available_tokens_per_s"]) == (
        CAPACITY, 200.0, CAPACITY - 200)
    assert error["basis"] == {f"{MODEL}@fp32": "benchmark", f"{MODEL}@bf16": "unknown"}
    assert "261" in error["message"] and "61" in error["message"]
    assert (await reserve(admin_http, b, CAPACITY - 200)).status_code == 201  # exactly what is left


async def test_two_posts_racing_for_the_last_capacity_get_one_201_and_one_409(admin_http):
    a, _ = await new_tenant_key(admin_http, "race-a")
    b, _ = await new_tenant_key(admin_http, "race-b")
    first, second = await asyncio.gather(reserve(admin_http, a, 200), reserve(admin_http, b, 200))
    assert sorted([first.status_code, second.status_code]) == [201, 409]


async def test_an_ended_reservation_frees_its_capacity(admin_http):
    a, _ = await new_tenant_key(admin_http, "free-a")
    rid = (await reserve(admin_http, a, CAPACITY)).json()["id"]
    assert (await reserve(admin_http, a, 1)).status_code == 409
    await admin_http.delete(url(a, rid), headers=ADMIN)
    assert (await reserve(admin_http, a, 1)).status_code == 201


@pytest.mark.parametrize("body,param", [
    ({"model": MODEL, "output_tokens_per_s": 0, "monthly_fee": "1"}, "output_tokens_per_s"),
    ({"model": MODEL, "output_tokens_per_s": -5, "monthly_fee": "1"}, "output_tokens_per_s"),
    ({"model": MODEL, "output_tokens_per_s": "fast", "monthly_fee": "1"}, "output_tokens_per_s"),
    ({"model": MODEL, "output_tokens_per_s": 1, "monthly_fee": "-1"}, "monthly_fee"),
    ({"model": MODEL, "output_tokens_per_s": 1}, "monthly_fee"),
    ({"model": MODEL, "output_tokens_per_s": 1, "monthly_fee": "1", "burst": 3}, "burst"),
])
async def test_bad_values_are_400(admin_http, body, param):
    tenant, _ = await new_tenant_key(admin_http, "bad")
    assert_openai_error(await admin_http.post(url(tenant), headers=ADMIN, json=body), 400, param=param)


async def test_unknown_tenant_model_or_reservation_is_404(admin_http):
    assert_openai_error(await reserve(admin_http, "nobody", 1), 404)
    tenant, _ = await new_tenant_key(admin_http, "unknown")
    r = await admin_http.post(url(tenant), headers=ADMIN,
                              json={"model": "gpt-9", "output_tokens_per_s": 1, "monthly_fee": "1"})
    assert_openai_error(r, 404, param="model", code="model_not_found")
    assert_openai_error(await admin_http.delete(url(tenant, "no-such-id"), headers=ADMIN), 404)
    assert_openai_error(await admin_http.get(url("nobody"), headers=ADMIN), 404)


def test_the_fee_is_prorated_by_the_second_over_the_month():
    month = Month(2026, 11)  # 30 days
    whole = Reservation(monthly_fee=Decimal("300"), created_at=month.start - timedelta(days=3), ended_at=None)
    assert prorated_fee(whole, month) == Decimal("300")
    half = Reservation(monthly_fee=Decimal("300"), created_at=datetime(2026, 11, 16, tzinfo=UTC), ended_at=None)
    assert prorated_fee(half, month) == Decimal("150")
    ended = Reservation(monthly_fee=Decimal("300"), created_at=datetime(2026, 11, 16, tzinfo=UTC),
                        ended_at=datetime(2026, 11, 17, tzinfo=UTC))
    assert prorated_fee(ended, month) == Decimal("10")
    assert prorated_fee(ended, Month(2026, 12)) == 0


async def test_the_bill_shows_the_fee_from_creation_and_the_tokens_under_and_over(admin_http, data_services):
    tenant, key = await new_tenant_key(admin_http, "billed")
    now = utcnow()
    month = Month.containing(now)
    empty = (await admin_http.get(f"/admin/tenants/{tenant}/bill?month={month}", headers=ADMIN)).json()
    assert empty["lines"] == [] and empty["total_cost"] == "0"
    rid = (await reserve(admin_http, tenant, 5, fee="720")).json()["id"]
    bill = (await admin_http.get(f"/admin/tenants/{tenant}/bill?month={month}", headers=ADMIN)).json()
    (fee,) = bill["lines"]
    assert (fee["kind"], fee["model"], fee["reservation_id"], fee["completion_tokens"]) == (
        "reservation_fee", MODEL, rid, 0)
    assert Decimal(fee["cost"]) > 0 and bill["total_cost"] == fee["cost"]
    # Two requests: 100 completion tokens each, 60 and 100 of them covered by the reservation (the engine's count).
    for n, covered in enumerate((60, 100)):
        data_services.ledger.record(UsageRecord(
            request_id=f"{tenant}-{n}", tenant_id=tenant, key_id=key["id"], endpoint="/v1/chat/completions",
            model=MODEL, prompt_tokens=1000, completion_tokens=100, reserved_tokens=covered,
            created_at=utcnow()))
    await data_services.ledger.flush()
    bill = (await admin_http.get(f"/admin/tenants/{tenant}/bill?month={month}", headers=ADMIN)).json()
    usage, fee = bill["lines"]
    assert (usage["kind"], usage["completion_tokens"], usage["prompt_tokens"]) == ("interactive", 40, 2000)
    # 2000 prompt tokens at 0.10 + the 40 over the reservation at 0.30 per million; the covered 160 cost nothing.
    assert Decimal(usage["cost"]) == Decimal("0.000212")
    assert (fee["kind"], fee["completion_tokens"]) == ("reservation_fee", 160)
    assert usage["completion_tokens"] + fee["completion_tokens"] == 200  # every token on one line, once
    assert Decimal(bill["total_cost"]) == Decimal(usage["cost"]) + Decimal(fee["cost"])
    every = (await admin_http.get(f"/admin/bills?month={month}", headers=ADMIN)).json()
    assert next(b for b in every["data"] if b["tenant_id"] == tenant)["total_cost"] == bill["total_cost"]
