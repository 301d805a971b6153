"""budget.crossed from the ledger's flush: 50/80/100 % once per tenant, month and threshold, in the transaction
that wrote the usage, whoever flushes."""
import asyncio
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from gateway.alerts import Alerts
from gateway.alerts.budget import check_budgets
from gateway.domain.alert_events import BUDGET_CROSSED
from gateway.billing.ledger import Ledger, UsageRecord
from gateway.billing.prices import PriceBook
from gateway.crud.prices import set_price
from gateway.crud.tenants import create_tenant
from gateway.db.models.tenant import Tenant
from tests.gateway.alerts.conftest import BOTH
from tests.gateway.alerts.helpers import BOX, add_webhook, deliveries

MODEL = "m"
DEC = datetime(2026, 12, 1, 12, tzinfo=UTC)


@pytest.fixture
def tenant_id(database):
    with database.session() as s:
        set_price(s, model=MODEL, input_per_million=Decimal("0.1"), output_per_million=Decimal("0.3"),
                  effective_from=datetime(2026, 1, 1, tzinfo=UTC))
        return create_tenant(s, name="acme", monthly_token_budget=1000).id


def ledger(database) -> Ledger:
    alerts = Alerts(database, deliver=False, box=BOX)
    return Ledger(database, PriceBook(database), linger_s=0, after_insert=alerts.after_usage)


def rec(tenant_id: str, n: int, tokens: int = 100, when: datetime = DEC) -> UsageRecord:
    return UsageRecord(request_id=f"req-{tenant_id}-{n}", tenant_id=tenant_id, key_id=None,
                       endpoint="/v1/chat/completions", model=MODEL, prompt_tokens=tokens // 2,
                       completion_tokens=tokens - tokens // 2, created_at=when)


def crossings(database) -> list[tuple[str, int]]:
    import json
    return [(json.loads(d.body)["data"]["month"], json.loads(d.body)["data"]["threshold"])
            for d in deliveries(database, BUDGET_CROSSED)]


@BOTH
async def test_each_threshold_fires_once_as_usage_passes_it(database, tenant_id):
    add_webhook(database, "http://127.0.0.1:9/h", [BUDGET_CROSSED])
    book = ledger(database)
    for n in range(4):  # 400 of 1000: nothing yet
        book.record(rec(tenant_id, n))
        await book.flush()
    assert crossings(database) == []
    book.record(rec(tenant_id, 4))  # 500: 50 %
    await book.flush()
    assert crossings(database) == [("2026-12", 50)]
    for n in range(5, 10):  # 600 .. 1000: 80 % at 800, 100 % at 1000, each once
        book.record(rec(tenant_id, n))
        await book.flush()
    for n in range(10, 13):  # past the budget: nothing more
        book.record(rec(tenant_id, n))
        await book.flush()
    assert sorted(crossings(database)) == [("2026-12", 50), ("2026-12", 80), ("2026-12", 100)]
    data = [__import__("json").loads(d.body)["data"] for d in deliveries(database)]
    assert {d["tenant_id"] for d in data} == {tenant_id} and data[0]["monthly_token_budget"] == 1000


async def test_one_batch_jumping_several_thresholds_fires_each(database, tenant_id):
    add_webhook(database, "http://127.0.0.1:9/h", ["*"])
    book = ledger(database)
    book.record(rec(tenant_id, 0, tokens=850))
    await book.flush()
    assert sorted(crossings(database)) == [("2026-12", 50), ("2026-12", 80)]


async def test_a_raised_budget_does_not_fire_again_that_month_but_a_new_month_does(database, tenant_id):
    add_webhook(database, "http://127.0.0.1:9/h", ["*"])
    book = ledger(database)
    book.record(rec(tenant_id, 0, tokens=600))
    await book.flush()
    with database.session() as s:
        s.get(Tenant, tenant_id).monthly_token_budget = 2000  # 600 of 2000: back under 50 %
        s.commit()
    book.record(rec(tenant_id, 1, tokens=500))  # 1100 of 2000: over 50 % again, the same month
    await book.flush()
    assert crossings(database) == [("2026-12", 50)]
    book.record(rec(tenant_id, 2, tokens=1100, when=datetime(2027, 1, 2, tzinfo=UTC)))
    await book.flush()
    assert sorted(crossings(database)) == [("2026-12", 50), ("2027-01", 50)]


async def test_one_batch_of_several_tenants_and_months(database, tenant_id):
    add_webhook(database, "http://127.0.0.1:9/h", ["*"])
    with database.session() as s:
        other = create_tenant(s, name="other", monthly_token_budget=100).id
    book = ledger(database)
    book.record(rec(tenant_id, 0, tokens=500))
    book.record(rec(other, 1, tokens=100))
    book.record(rec(other, 2, tokens=60, when=datetime(2027, 1, 1, tzinfo=UTC)))
    await book.flush()
    import json
    got = sorted((d["tenant_id"] == other, d["month"], d["threshold"])
                 for d in (json.loads(x.body)["data"] for x in deliveries(database)))
    assert got == [(False, "2026-12", 50), (True, "2026-12", 50), (True, "2026-12", 80), (True, "2026-12", 100),
                   (True, "2027-01", 50)]


async def test_tenants_without_a_budget_and_webhooks_without_the_event_get_nothing(database, tenant_id):
    add_webhook(database, "http://127.0.0.1:9/h", ["canary.rolled_back"])
    with database.session() as s:
        free = create_tenant(s, name="free").id
    book = ledger(database)
    book.record(rec(free, 0, tokens=10**6))
    book.record(rec(tenant_id, 1, tokens=900))
    await book.flush()
    assert deliveries(database) == []


@BOTH
async def test_racing_checks_mark_each_crossing_once(database, tenant_id):
    """Several gateways flushing the same tenant at once: the marks' key lets one insert win."""
    add_webhook(database, "http://127.0.0.1:9/h", ["*"])
    book = ledger(database)
    book.record(rec(tenant_id, 0, tokens=900))
    with database.engine.begin() as conn:  # the rows, without the hook (as if written by another gateway)
        from gateway.crud.usage import insert_usage
        insert_usage(conn, rows=[book._row(r) for r in list(book._queue)])
    book._queue.clear()

    def check() -> list[str]:
        with database.engine.begin() as conn:
            return check_budgets(conn, [{"tenant_id": tenant_id, "created_at": DEC}])
    results = await asyncio.gather(*(asyncio.to_thread(check) for _ in range(4)))
    assert sum(len(r) for r in results) == 2  # 50 and 80, once each
    assert sorted(crossings(database)) == [("2026-12", 50), ("2026-12", 80)]


async def test_a_failing_budget_check_never_costs_the_usage_rows(database, tenant_id, monkeypatch):
    from gateway.alerts import budget
    add_webhook(database, "http://127.0.0.1:9/h", ["*"])
    monkeypatch.setattr(budget, "month_tokens_by_tenant", lambda *a, **k: 1 / 0)
    book = ledger(database)
    book.record(rec(tenant_id, 0, tokens=900))
    await book.flush()
    from gateway.crud.usage import month_tokens
    from gateway.domain.period import Month
    with database.session() as s:
        assert month_tokens(s, tenant_id=tenant_id, month=Month(2026, 12)) == 900
    assert deliveries(database) == []
