"""GET /v1/usage: the calling tenant's own usage, per model (never another tenant's)."""
from __future__ import annotations

from fastapi import APIRouter

from gateway.api.deps import TenantDep
from gateway.api.periods import PeriodDep
from gateway.billing.bills import bill_lines, period_totals
from gateway.schemas.billing import UsageReport
from gateway.services.deps import ServicesDep, SessionDep

router = APIRouter()


@router.get("/usage", response_model=UsageReport)
def usage(principal: TenantDep, period: PeriodDep, session: SessionDep, services: ServicesDep) -> UsageReport:
    """Your usage: ?month=YYYY-MM, or ?start=YYYY-MM-DD&end=YYYY-MM-DD (inclusive); default this month."""
    lines, total = bill_lines(period_totals(session, period=period, prices=services.prices,
                                            tenant_id=principal.tenant_id))
    return UsageReport(tenant_id=principal.tenant_id, start=period.start.isoformat(),
                       end=period.end.isoformat(), lines=lines, total_cost=total,
                       currency=services.settings.currency)
