"""budget.crossed: a tenant's month tokens pass 50, 80 or 100 % of its monthly budget.

Where: right after the ledger inserts usage rows, in the same transaction (Ledger's `after_insert`). The ledger
is the one place every billed token passes through (live, batch and replayed from the spool alike), so a
crossing cannot be missed, and the sum it reads includes the rows just written. The cost is a batch's worth of
work, not a request's: one query for the budgets of the batch's tenants, one for their marks, and the month's
sum only for a tenant with a threshold still unmarked (the ix_usage_ledger_tenant_created index serves it).
A crossing found late (two gateways' concurrent flushes each seeing only their own rows) is found by the next
flush: detection is "the sum is past the threshold and no mark exists", not "this batch stepped over it".

Once: a mark per (tenant, "YYYY-MM:<threshold>"), so each threshold fires at most once per tenant per month.
A budget raised mid-month so usage falls back under a threshold does not fire it again that month."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, select

from gateway.alerts.events import BUDGET_CROSSED, BUDGET_THRESHOLDS, AlertEvent
from gateway.alerts.marks import mark_once, marked_periods
from gateway.alerts.outbox import emit
from gateway.billing.period import Month
from gateway.crud.usage import month_tokens
from gateway.db.models.tenant import Tenant


def check_budgets(conn: Connection, rows: Iterable[dict[str, Any]]) -> list[str]:
    """After usage `rows` (dicts with tenant_id and created_at) are inserted: emit what they crossed.
    Returns the delivery ids written."""
    months = {(r["tenant_id"], Month.containing(r["created_at"])) for r in rows}
    if not months:
        return []
    tenants = {t for t, _ in months}
    budgets = {tid: (name, budget) for tid, name, budget in conn.execute(
        select(Tenant.id, Tenant.name, Tenant.monthly_token_budget)
        .where(Tenant.id.in_(tenants), Tenant.monthly_token_budget.is_not(None), Tenant.monthly_token_budget > 0))}
    out: list[str] = []
    for tenant_id, month in sorted(months, key=lambda m: (m[0], str(m[1]))):
        if tenant_id in budgets:
            name, budget = budgets[tenant_id]
            out += _check_one(conn, tenant_id, name, int(budget), month)
    return out


def _check_one(conn: Connection, tenant_id: str, name: str, budget: int, month: Month) -> list[str]:
    done = marked_periods(conn, kind=BUDGET_CROSSED, subject=tenant_id)
    open_thresholds = [t for t in BUDGET_THRESHOLDS if f"{month}:{t}" not in done]
    if not open_thresholds:
        return []
    used = month_tokens(conn, tenant_id=tenant_id, month=month)  # a Connection answers .scalar() like a Session
    out: list[str] = []
    for threshold in open_thresholds:
        if used * 100 < budget * threshold:
            break  # thresholds ascend
        if mark_once(conn, kind=BUDGET_CROSSED, subject=tenant_id, period=f"{month}:{threshold}"):
            out += emit(conn, AlertEvent(BUDGET_CROSSED, {
                "tenant_id": tenant_id, "tenant_name": name, "month": str(month), "threshold": threshold,
                "used_tokens": used, "monthly_token_budget": budget}))
    return out
