"""Bills (per-model, kind and tier lines for a tenant and a month) and the usage CSV export. The CSV's `cost`
is each row's flat (first-tier) cost; a tiered model's true cost per tier is the bill's."""
from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from decimal import Decimal

from sqlalchemy.orm import Session

from gateway.domain.period import Month, Period
from gateway.billing.prices import DEFAULT_BATCH_DISCOUNT, PriceBook, price_history
from gateway.billing.reservation_fees import fee_lines
from gateway.billing.tiered import tiered_models, tiered_totals
from gateway.crud.prices import list_prices
from gateway.crud.tenants import list_tenants
from gateway.crud.usage import (ClampTotals, ModelTotals, clamp_totals, iter_model_rows, iter_usage,
                                totals_by_model, totals_by_prompt_version)
from gateway.db.database import Database
from gateway.schemas.billing import Bill, BillLine, PromptVersionBill, PromptVersionBillLine, decimal_text

CSV_COLUMNS = ("request_id", "created_at", "tenant_id", "key_id", "endpoint", "model", "version",
               "prompt_tokens", "completion_tokens", "cached_tokens", "cache_hit", "cost", "currency",
               "latency_ms", "ttft_ms", "status", "kind", "engine_ms")


def _line(t: ModelTotals) -> BillLine:
    return BillLine(model=t.model, kind=t.kind, tier=t.tier, requests=t.requests, prompt_tokens=t.prompt_tokens,
                    completion_tokens=t.completion_tokens, cached_tokens=t.cached_tokens, cost=t.cost)


def _order(t: ModelTotals) -> tuple:
    return t.tenant_id, t.model, t.kind != "interactive", t.tier  # "interactive" before "batch"


def bill_lines(totals: list[ModelTotals], fees: list[BillLine] = ()) -> tuple[list[BillLine], Decimal]:
    """Usage lines, then the reservation fee lines; the total is their sum."""
    lines = [*(_line(t) for t in totals), *fees]
    return lines, sum((line.cost for line in lines), Decimal(0))


def period_totals(session: Session, *, period: Period, prices: PriceBook | None,
                  tenant_id: str | None = None) -> list[ModelTotals]:
    """The period's lines per tenant, model, kind and tier: models with volume tiers walked row by row from the
    start of the period's first month (gateway.billing.tiered), the others summed in SQL. `prices` gives each
    model's batch discount (the catalogue's); without it, the default discount."""
    history = price_history(list_prices(session))  # read now: the bill never waits on a price refresh
    tiered = tiered_models(history)
    flat_totals = [t for t in totals_by_model(session, period=period, tenant_id=tenant_id) if t.model not in tiered]
    if not tiered:
        return flat_totals
    walked = [t for _, t in tiered_totals(_tiered_rows(session, period, tiered, tenant_id), history,
                                          _discount(prices), since=period.start)]
    return sorted([*flat_totals, *walked], key=_order)


def _tiered_rows(session: Session, period: Period, models: set[str], tenant_id: str | None):
    """The rows tiers need for `period`: from the start of its first month, where the volume starts."""
    whole = Period(Month.containing(period.start).start, period.end)
    return iter_model_rows(session, period=whole, models=models, tenant_id=tenant_id)


def _discount(prices: PriceBook | None):
    return prices.batch_discount if prices is not None else (lambda model: DEFAULT_BATCH_DISCOUNT)


def tenant_bill(session: Session, *, tenant_id: str, month: Month, currency: str,
                prices: PriceBook | None = None) -> Bill:
    lines, total = bill_lines(period_totals(session, period=month.period, prices=prices, tenant_id=tenant_id),
                              fee_lines(session, month=month, tenant_id=tenant_id).get(tenant_id, []))
    clamps = clamp_totals(session, period=month.period, tenant_id=tenant_id).get(tenant_id)
    return Bill(tenant_id=tenant_id, month=str(month), lines=lines, total_cost=total, currency=currency,
                **_clamp_fields(clamps))


def _clamp_fields(clamps: ClampTotals | None) -> dict:
    if clamps is None:
        return {}
    return {"requests_clamped": clamps.requests, "tokens_saved_by_cap": clamps.tokens_saved}


def tenant_bill_by_prompt_version(session: Session, *, tenant_id: str, month: Month, currency: str,
                                  prices: PriceBook | None = None) -> PromptVersionBill:
    """The same month as `tenant_bill`, cut by the stored prompt version that built each request."""
    history = price_history(list_prices(session))
    tiered = tiered_models(history)
    grouped = [(pv, t) for pv, t in totals_by_prompt_version(session, period=month.period, tenant_id=tenant_id)
               if t.model not in tiered]
    if tiered:
        grouped += tiered_totals(_tiered_rows(session, month.period, tiered, tenant_id), history, _discount(prices),
                                 by_prompt_version=True)
        grouped.sort(key=lambda g: (g[0] is None, g[0] or "", *_order(g[1])))
    lines = [PromptVersionBillLine(prompt_version=pv, **_line(t).model_dump()) for pv, t in grouped]
    return PromptVersionBill(tenant_id=tenant_id, month=str(month), lines=lines,
                             total_cost=sum((line.cost for line in lines), Decimal(0)), currency=currency)


def all_bills(session: Session, *, month: Month, currency: str, prices: PriceBook | None = None) -> list[Bill]:
    """One bill per tenant, including tenants with no usage (an empty bill)."""
    by_tenant: dict[str, list[ModelTotals]] = {t.id: [] for t in list_tenants(session)}
    for totals in period_totals(session, period=month.period, prices=prices):
        by_tenant.setdefault(totals.tenant_id, []).append(totals)
    clamps = clamp_totals(session, period=month.period)
    fees = fee_lines(session, month=month)
    bills = []
    for tenant_id, totals in by_tenant.items():
        lines, total = bill_lines(totals, fees.get(tenant_id, []))
        bills.append(Bill(tenant_id=tenant_id, month=str(month), lines=lines, total_cost=total,
                          currency=currency, **_clamp_fields(clamps.get(tenant_id))))
    return bills


def usage_csv(database: Database, *, period: Period, tenant_id: str | None = None) -> Iterator[str]:
    """The ledger rows of `period` as CSV text, a chunk at a time (its own session, so it can
    outlive the request's)."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(CSV_COLUMNS)
    with database.session() as session:
        for n, row in enumerate(iter_usage(session, period=period, tenant_id=tenant_id), 1):
            writer.writerow(_csv_row(row))
            if n % 500 == 0:
                yield buf.getvalue()
                buf.seek(0)
                buf.truncate()
    yield buf.getvalue()


def _csv_row(row) -> list:
    return [row.request_id, row.created_at.isoformat(), row.tenant_id, row.key_id or "", row.endpoint,
            row.model, row.version or "", row.prompt_tokens, row.completion_tokens, row.cached_tokens,
            "true" if row.cache_hit else "false", "" if row.cost is None else decimal_text(row.cost),
            row.currency, "" if row.latency_ms is None else row.latency_ms,
            "" if row.ttft_ms is None else row.ttft_ms, row.status, row.kind,
            "" if row.engine_ms is None else row.engine_ms]
