"""Tiered prices on the bill: tokens before and after a boundary at their own tier's rates, a request straddling
it split, cached prompt tokens at the cached price inside a tier, the batch discount inside a tier, and twenty
requests finishing together across the boundary billed to the token (SQLite and PostgreSQL)."""
import asyncio
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from gateway.billing.bills import all_bills, tenant_bill, tenant_bill_by_prompt_version
from gateway.billing.ledger import Ledger, UsageRecord
from gateway.billing.prices import PriceBook
from gateway.crud.prices import set_price
from gateway.crud.tenants import create_tenant
from gateway.crud.usage import iter_usage
from gateway.domain.period import Month
from gateway.domain.tiers import Tier, tiers_to_json

D = Decimal
NOV = Month(2026, 11)
# 2 and 4 per million up to 1000 tokens a month, then 1 and 2; cached prompt tokens 0.5 in every tier.
TIERS = (Tier(1000, D("2"), D("4")), Tier(None, D("1"), D("2")))


@pytest.fixture
def tiered(database):
    with database.session() as s:
        set_price(s, model="m", input_per_million=D("2"), output_per_million=D("4"),
                  cached_input_per_million=D("0.5"), tiers=tiers_to_json(TIERS),
                  effective_from=datetime(2026, 1, 1, tzinfo=UTC))
        set_price(s, model="flat", input_per_million=D("1"), output_per_million=D("1"),
                  effective_from=datetime(2026, 1, 1, tzinfo=UTC))
        tenant, other = create_tenant(s, name="volume").id, create_tenant(s, name="other").id
    prices = PriceBook(database)
    return Ledger(database, prices, "USD", linger_s=0), prices, tenant, other


def _row(tenant, n, day, prompt, completion, *, cached=0, kind="interactive", model="m", second=0, pv=None):
    return UsageRecord(request_id=f"{tenant[:8]}-{n}", tenant_id=tenant, key_id=None, endpoint="/v1/chat/completions",
                       model=model, prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached,
                       kind=kind, created_at=datetime(2026, 11, day, 0, 0, second, tzinfo=UTC), prompt_version=pv)


def _lines(bill):
    return [(line.model, line.kind, line.tier, line.requests, line.prompt_tokens, line.completion_tokens,
             line.cached_tokens, line.cost) for line in bill.lines]


async def test_before_after_and_straddling_the_boundary(database, tiered):
    ledger, prices, tenant, other = tiered
    ledger.record(_row(tenant, 1, 1, 600, 200))  # [0, 800): tier 1
    ledger.record(_row(tenant, 2, 2, 300, 100))  # [800, 1200): prompt 200 in tier 1, prompt 100 + completion 100 in 2
    ledger.record(_row(tenant, 3, 3, 100, 100))  # [1200, 1400): tier 2
    ledger.record(_row(other, 1, 1, 900, 0))  # another tenant's volume counts for it alone
    ledger.record(_row(tenant, 4, 1, 10, 10, model="flat"))  # another model: its own volume, its flat price
    await ledger.flush()
    with database.session() as s:
        bill = tenant_bill(s, tenant_id=tenant, month=NOV, currency="USD", prices=prices)
        everyone = {b.tenant_id: b for b in all_bills(s, month=NOV, currency="USD", prices=prices)}
        by_prompt = tenant_bill_by_prompt_version(s, tenant_id=tenant, month=NOV, currency="USD", prices=prices)
        stored = sum(r.cost for r in iter_usage(s, period=NOV.period, tenant_id=tenant))
    assert _lines(bill) == [
        ("flat", "interactive", 1, 1, 10, 10, 0, D("0.00002")),
        # 800 prompt x 2 + 200 completion x 4 per million
        ("m", "interactive", 1, 2, 800, 200, 0, D("0.0024")),
        # 200 prompt x 1 + 200 completion x 2 per million
        ("m", "interactive", 2, 1, 200, 200, 0, D("0.0006"))]
    assert bill.total_cost == D("0.00302") == sum(line.cost for line in bill.lines)
    assert everyone[tenant].lines == bill.lines and everyone[other].total_cost == D("0.0018")
    assert by_prompt.total_cost == bill.total_cost and [line.tier for line in by_prompt.lines] == [1, 1, 2]
    # Each row's stored cost is its flat (first-tier) figure: the bill is what knows the tiers.
    assert stored == D("0.00362")
    body = bill.model_dump(mode="json")
    assert [(line["tier"], line["cost"]) for line in body["lines"]] == [(1, "0.00002"), (1, "0.0024"), (2, "0.0006")]


async def test_cached_prompt_tokens_keep_their_cached_price_inside_a_tier(database, tiered):
    ledger, prices, tenant, _ = tiered
    ledger.record(_row(tenant, 1, 1, 990, 0, cached=900))  # [0, 990): tier 1; 900 of them cached
    ledger.record(_row(tenant, 2, 2, 100, 10, cached=60))  # [990, 1100): cached 990..1050 straddles the boundary
    await ledger.flush()
    with database.session() as s:
        bill = tenant_bill(s, tenant_id=tenant, month=NOV, currency="USD", prices=prices)
    assert _lines(bill) == [
        # 900 cached x 0.5 + 90 x 2; then 10 cached x 0.5 (the cached price does not change with the tier)
        ("m", "interactive", 1, 2, 1000, 0, 910, D("0.000635")),
        # 50 cached x 0.5 + 40 x 1 + 10 completion x 2
        ("m", "interactive", 2, 0, 90, 10, 50, D("0.000085"))]
    assert bill.total_cost == D("0.00072")


async def test_the_batch_discount_applies_inside_a_tier(database, tiered):
    ledger, prices, tenant, _ = tiered
    ledger.record(_row(tenant, 1, 1, 1000, 0))  # fills tier 1
    ledger.record(_row(tenant, 2, 2, 100, 100, kind="batch"))  # tier 2, at half price (the default discount)
    ledger.record(_row(tenant, 3, 3, 100, 100))  # tier 2, full price: batch volume counts toward the tiers
    await ledger.flush()
    with database.session() as s:
        bill = tenant_bill(s, tenant_id=tenant, month=NOV, currency="USD", prices=prices)
    assert _lines(bill) == [
        ("m", "interactive", 1, 1, 1000, 0, 0, D("0.002")),
        ("m", "interactive", 2, 1, 100, 100, 0, D("0.0003")),
        ("m", "batch", 2, 1, 100, 100, 0, D("0.00015"))]


async def test_a_flat_price_point_mid_month_keeps_the_rows_stored_cost(database, tiered):
    ledger, prices, tenant, _ = tiered
    with database.session() as s:  # from the 10th, a flat price: the volume still counts, the tiers stop applying
        set_price(s, model="m", input_per_million=D("3"), output_per_million=D("3"),
                  effective_from=datetime(2026, 11, 10, tzinfo=UTC))
    prices.reload()
    ledger.record(_row(tenant, 1, 1, 1000, 0))
    ledger.record(_row(tenant, 2, 12, 100, 0))
    await ledger.flush()
    with database.session() as s:
        bill = tenant_bill(s, tenant_id=tenant, month=NOV, currency="USD", prices=prices)
    assert _lines(bill) == [("m", "interactive", 1, 2, 1100, 0, 0, D("0.0023"))]


@pytest.mark.postgres
async def test_twenty_concurrent_requests_across_the_boundary_bill_exactly(pg_url):
    from gateway.db.base import Base
    from gateway.db.database import Database

    database = Database(pg_url)
    Base.metadata.create_all(database.engine)
    try:
        with database.session() as s:
            set_price(s, model="m", input_per_million=D("2"), output_per_million=D("4"),
                      cached_input_per_million=D("0.5"),
                      tiers=tiers_to_json((Tier(475, D("2"), D("4")), Tier(None, D("1"), D("2")))),
                      effective_from=datetime(2026, 1, 1, tzinfo=UTC))
            tenant = create_tenant(s, name="rush").id
        prices = PriceBook(database)
        ledger = Ledger(database, prices, "USD", linger_s=0, batch_size=3)  # several inserts race each other
        await ledger.start()
        now = datetime.now(UTC)
        # Twenty requests of 40 prompt + 10 completion tokens finish at once, most at the same instant.
        await asyncio.gather(*(ledger.record_durably(UsageRecord(
            request_id=f"rush-{n}", tenant_id=tenant, key_id=None, endpoint="/v1/chat/completions", model="m",
            prompt_tokens=40, completion_tokens=10, created_at=now)) for n in range(20)))
        await ledger.close()
        month = Month.containing(now)
        with database.session() as s:
            bill = tenant_bill(s, tenant_id=tenant, month=month, currency="USD", prices=prices)
    finally:
        database.dispose()
    # 475 tokens in tier 1: nine whole requests (450) and 25 prompt tokens of the tenth; the rest in tier 2.
    assert _lines(bill) == [
        ("m", "interactive", 1, 10, 385, 90, 0, (385 * D(2) + 90 * D(4)) / 1_000_000),
        ("m", "interactive", 2, 10, 415, 110, 0, (415 * D(1) + 110 * D(2)) / 1_000_000)]
    assert bill.total_cost == D("0.001765")


async def test_a_period_within_the_month_counts_the_volume_from_the_months_start(database, tiered):
    from gateway.billing.bills import period_totals
    from gateway.domain.period import Period

    ledger, prices, tenant, _ = tiered
    ledger.record(UsageRecord(request_id="oct", tenant_id=tenant, key_id=None, endpoint="/v1/x", model="m",
                              prompt_tokens=5000, created_at=datetime(2026, 10, 30, tzinfo=UTC)))  # last month's
    ledger.record(_row(tenant, 1, 1, 1000, 0))  # fills November's tier 1
    ledger.record(_row(tenant, 2, 20, 100, 100))  # tier 2
    await ledger.flush()
    with database.session() as s:
        late = period_totals(s, period=Period(datetime(2026, 11, 15, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)),
                             prices=prices, tenant_id=tenant)
        both = period_totals(s, period=Period(datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)),
                             prices=prices, tenant_id=tenant)
    assert [(t.tier, t.requests, t.prompt_tokens, t.cost) for t in late] == [(2, 1, 100, D("0.0003"))]
    # October's 5000 tokens straddle its own boundary; November's volume starts again from zero.
    assert [(t.tier, t.requests, t.prompt_tokens, t.cost) for t in both] == [
        (1, 2, 2000, D("0.004")), (2, 1, 4100, D("0.0043"))]
