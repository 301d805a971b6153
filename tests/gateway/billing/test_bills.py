import csv
import io
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from gateway.billing.bills import CSV_COLUMNS, all_bills, tenant_bill, usage_csv
from gateway.billing.ledger import Ledger, UsageRecord
from gateway.billing.prices import PriceBook
from gateway.crud.prices import set_price
from gateway.crud.tenants import create_tenant
from gateway.domain.period import Month

D = Decimal


@pytest.fixture
def ledger_with_usage(database):
    with database.session() as s:
        set_price(s, model="a", input_per_million=D("0.1"), output_per_million=D("0.3"),
                  effective_from=datetime(2026, 1, 1, tzinfo=UTC))
        # The price changes mid-month: rows keep the price of their own time.
        set_price(s, model="a", input_per_million=D("1"), output_per_million=D("3"),
                  effective_from=datetime(2026, 11, 16, tzinfo=UTC))
        set_price(s, model="b", input_per_million=D("0.01"), output_per_million=D("0"),
                  effective_from=datetime(2026, 1, 1, tzinfo=UTC))
        t1, t2, idle = (create_tenant(s, name=n).id for n in ("one", "two", "idle"))
    ledger = Ledger(database, PriceBook(database), "USD")

    def use(n, tenant, model, p, c, day, **kw):
        ledger.record(UsageRecord(request_id=f"r{n}", tenant_id=tenant, key_id="k", endpoint="/v1/x",
                                  model=model, prompt_tokens=p, completion_tokens=c,
                                  created_at=datetime(2026, 11, day, 12, tzinfo=UTC), **kw))

    use(1, t1, "a", 1_000_000, 0, 1)  # 0.1
    use(2, t1, "a", 0, 1_000_000, 20)  # 3 (new price)
    use(3, t1, "b", 3, 0, 2, cached_tokens=1)
    use(4, t2, "a", 10, 10, 3, status="aborted")
    ledger.record(UsageRecord(request_id="dec", tenant_id=t1, key_id="k", endpoint="/v1/x", model="a",
                              prompt_tokens=1, created_at=datetime(2026, 12, 1, tzinfo=UTC)))
    return ledger, (t1, t2, idle)


async def test_tenant_bill_lines_per_model(database, ledger_with_usage):
    ledger, (t1, _, _) = ledger_with_usage
    await ledger.flush()
    with database.session() as s:
        bill = tenant_bill(s, tenant_id=t1, month=Month(2026, 11), currency="USD")
    assert [(line.model, line.requests, line.prompt_tokens, line.completion_tokens, line.cached_tokens, line.cost)
            for line in bill.lines] == [("a", 2, 1_000_000, 1_000_000, 0, D("3.1")),
                                     ("b", 1, 3, 0, 1, D("0.00000002"))]  # the cached token is free
    assert bill.total_cost == D("3.10000002")
    body = bill.model_dump(mode="json")
    assert body["total_cost"] == "3.10000002" and body["lines"][1]["cost"] == "0.00000002"
    # cache_accuracy is filled by the admin route from the live cache check (None here: no cache).
    assert set(body) == {"tenant_id", "month", "lines", "total_cost", "currency", "cache_accuracy",
                         "requests_clamped", "tokens_saved_by_cap"}
    assert body["cache_accuracy"] is None
    assert body["requests_clamped"] == 0 and body["tokens_saved_by_cap"] == 0  # no output cap clamped anything


async def test_all_bills_include_idle_tenants(database, ledger_with_usage):
    ledger, (t1, t2, idle) = ledger_with_usage
    await ledger.flush()
    with database.session() as s:
        bills = {b.tenant_id: b for b in all_bills(s, month=Month(2026, 11), currency="USD")}
    assert set(bills) == {t1, t2, idle}
    assert bills[idle].lines == [] and bills[idle].total_cost == 0
    assert bills[t2].total_cost == D("0.000004")


async def test_usage_csv_has_one_row_per_ledger_row(database, ledger_with_usage):
    ledger, (_t1, t2, _) = ledger_with_usage
    await ledger.flush()
    text = "".join(usage_csv(database, period=Month(2026, 11).period))
    table = list(csv.DictReader(io.StringIO(text)))
    assert tuple(table[0]) == CSV_COLUMNS
    assert [r["request_id"] for r in table] == ["r1", "r3", "r4", "r2"]  # time order
    assert table[0]["cost"] == "0.1" and table[2]["status"] == "aborted"
    only_t2 = list(csv.DictReader(io.StringIO("".join(usage_csv(database, period=Month(2026, 11).period,
                                                                  tenant_id=t2)))))
    assert [r["request_id"] for r in only_t2] == ["r4"]
