"""budget.crossed: a tenant's month tokens pass 50, 80 or 100 % of its monthly budget.

Where: right after the ledger inserts usage rows, in the same transaction (Ledger's `after_insert`). The ledger
is the one place every billed token passes through (live, batch and replayed from the spool alike), so a
crossing cannot be missed, and the sum it reads includes the rows just written. The cost is a batch's worth of
work, not a request's: one query for the budgets of the batch's tenants, one for their marks, and one for the
month's sums of those with a threshold still unmarked (the ix_usage_ledger_tenant_created index serves it).
A crossing found late (two gateways' concurrent flushes each seeing only their own rows) is found by the next
flush: detection is "the sum is past the threshold and no mark exists", not "this batch stepped over it".

Once: a mark per (tenant, "YYYY-MM:<threshold>"), so each threshold fires at most once per tenant per month.
A budget raised mid-month so usage falls back under a threshold does not fire it again that month."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, bindparam, func, select

from gateway.domain.alert_events import BUDGET_CROSSED, BUDGET_THRESHOLDS, AlertEvent
from gateway.alerts.marks import mark_once
from gateway.alerts.outbox import emit
from gateway.domain.period import Month
from gateway.db.models.alert_mark import AlertMark
from gateway.db.models.tenant import Tenant
from gateway.db.models.usage import Usage
from gateway.db.types import UTCDateTime


# Built once: a flush pays for running them, not for building them again (most of the cost on a quiet database).
_BUDGETS = (select(Tenant.id, Tenant.name, Tenant.monthly_token_budget)
            .where(Tenant.id.in_(bindparam("tenants", expanding=True)), Tenant.monthly_token_budget.is_not(None),
                   Tenant.monthly_token_budget > 0))
_MARKS = select(AlertMark.subject, AlertMark.period).where(
    AlertMark.kind == BUDGET_CROSSED, AlertMark.subject.in_(bindparam("tenants", expanding=True)),
    AlertMark.period.in_(bindparam("periods", expanding=True)))
_MONTH_TOKENS = (select(Usage.tenant_id, func.coalesce(func.sum(Usage.prompt_tokens + Usage.completion_tokens), 0))
                 .where(Usage.tenant_id.in_(bindparam("tenants", expanding=True)),
                        Usage.created_at >= bindparam("start", type_=UTCDateTime()),
                        Usage.created_at < bindparam("end", type_=UTCDateTime()))
                 .group_by(Usage.tenant_id))


def check_budgets(conn: Connection, rows: Iterable[dict[str, Any]]) -> list[str]:
    """After usage `rows` (dicts with tenant_id and created_at) are inserted: emit what they crossed.
    Returns the delivery ids written. At most three reads per month in the batch, whatever its tenants."""
    months: dict[Month, set[str]] = {}
    for r in rows:
        months.setdefault(Month.containing(r["created_at"]), set()).add(r["tenant_id"])
    out: list[str] = []
    for month, tenants in sorted(months.items(), key=lambda m: str(m[0])):
        out += _check_month(conn, month, tenants)
    return out


def _check_month(conn: Connection, month: Month, tenants: set[str]) -> list[str]:
    budgets = {tid: (name, int(budget))
               for tid, name, budget in conn.execute(_BUDGETS, {"tenants": sorted(tenants)})}
    if not budgets:
        return []
    periods = {f"{month}:{t}": t for t in BUDGET_THRESHOLDS}
    marked: dict[str, set[int]] = {}
    for subject, period in conn.execute(_MARKS, {"tenants": sorted(budgets), "periods": sorted(periods)}):
        marked.setdefault(subject, set()).add(periods[period])
    open_ = {tid: [t for t in BUDGET_THRESHOLDS if t not in marked.get(tid, ())] for tid in budgets}
    open_ = {tid: thresholds for tid, thresholds in open_.items() if thresholds}
    if not open_:
        return []
    used = month_tokens_by_tenant(conn, tenant_ids=set(open_), month=month)
    out: list[str] = []
    for tenant_id in sorted(open_):
        name, budget = budgets[tenant_id]
        spent = used.get(tenant_id, 0)
        for threshold in open_[tenant_id]:
            if spent * 100 < budget * threshold:
                break  # thresholds ascend
            if mark_once(conn, kind=BUDGET_CROSSED, subject=tenant_id, period=f"{month}:{threshold}"):
                out += emit(conn, AlertEvent(BUDGET_CROSSED, {
                    "tenant_id": tenant_id, "tenant_name": name, "month": str(month), "threshold": threshold,
                    "used_tokens": spent, "monthly_token_budget": budget}))
    return out


def month_tokens_by_tenant(conn: Connection, *, tenant_ids: set[str], month: Month) -> dict[str, int]:
    """What gateway.crud.usage.month_tokens counts (prompt + completion tokens), for several tenants at once."""
    params = {"tenants": sorted(tenant_ids), "start": month.start, "end": month.end}
    return {tid: int(total) for tid, total in conn.execute(_MONTH_TOKENS, params)}
