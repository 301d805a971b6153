"""Admin: monthly bills and the usage CSV export."""
from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse, StreamingResponse

from gateway.api.periods import MonthDep
from gateway.billing.bills import all_bills, tenant_bill, tenant_bill_by_prompt_version, usage_csv
from gateway.billing.waste import waste_report
from gateway.schemas.billing import Bill, BillList, CacheAccuracy, WasteReport
from gateway.services.deps import ServicesDep, SessionDep
from gateway.services.tenants import tenant_or_404

router = APIRouter()


@router.get("/tenants/{tenant_id}/bill", response_model=Bill)
def bill(tenant_id: str, month: MonthDep, session: SessionDep, services: ServicesDep,
         group_by: Literal["prompt_version"] | None = None) -> Bill | JSONResponse:
    """A tenant's bill for a month (UTC): one line per model, or with `group_by=prompt_version` one line per
    stored prompt version and model."""
    tenant_or_404(session, tenant_id)
    currency = services.settings.currency
    if group_by == "prompt_version":
        grouped = tenant_bill_by_prompt_version(session, tenant_id=tenant_id, month=month, currency=currency,
                                                 prices=services.prices)
        return JSONResponse(grouped.model_dump(mode="json"))
    return _with_cache_accuracy(services, tenant_bill(session, tenant_id=tenant_id, month=month, currency=currency,
                                                      prices=services.prices))


@router.get("/tenants/{tenant_id}/waste", response_model=WasteReport)
def waste(tenant_id: str, month: MonthDep, session: SessionDep) -> WasteReport:
    """A tenant's repeated input for a month (UTC): the share of engine input its prefix cache already held, and
    the tokens semantic-cache hits spared, per model and in all."""
    tenant_or_404(session, tenant_id)
    return waste_report(session, tenant_id=tenant_id, month=month)


@router.get("/bills", response_model=BillList)
def bills(month: MonthDep, session: SessionDep, services: ServicesDep) -> BillList:
    """Every tenant's bill for a month, empty ones included."""
    every = all_bills(session, month=month, currency=services.settings.currency, prices=services.prices)
    return BillList(month=str(month), data=[_with_cache_accuracy(services, b) for b in every])


def _with_cache_accuracy(services, bill: Bill) -> Bill:
    """The bill with the cache's live-check figures for its tenant, when the cache is on."""
    cache = getattr(services, "cache", None)  # a Services without the cache component has none
    if cache is None:
        return bill
    t = cache.audit.of(bill.tenant_id)
    return bill.model_copy(update={"cache_accuracy": CacheAccuracy(
        sampled=t.sampled, disagreed=t.disagreed, estimated_wrong_hit_rate=t.estimated_wrong_hit_rate,
        threshold_tightening=t.tightening)})


@router.get("/usage.csv", response_class=StreamingResponse)
def usage_export(month: MonthDep, services: ServicesDep, tenant_id: str | None = None) -> StreamingResponse:
    """Every ledger row of the month as CSV (optionally one tenant's)."""
    return StreamingResponse(
        usage_csv(services.database, period=month.period, tenant_id=tenant_id), media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="usage-{month}.csv"'})
