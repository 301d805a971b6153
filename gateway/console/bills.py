"""Bills: every tenant's bill for a month (GET /admin/bills' function), with totals and a CSV."""
from __future__ import annotations

from decimal import Decimal

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from gateway.billing.bills import all_bills, usage_csv
from gateway.console.forms import in_words, page_of
from gateway.console.render import error_page, render
from gateway.console.state import console_state
from gateway.console.viewer import AdminViewerDep
from gateway.crud.tenants import list_tenants
from gateway.domain.errors import APIError
from gateway.services.deps import ServicesDep, SessionDep
from gateway.services.periods import parse_month

router = APIRouter()


@router.get("/bills")
def bills(request: Request, viewer: AdminViewerDep, session: SessionDep, services: ServicesDep,
          month: str | None = None, page: int = 1) -> Response:
    """Each tenant's total for the month, and the grand total."""
    try:
        chosen = parse_month(month or None)
    except APIError as e:
        return error_page(request, viewer, e.status, in_words(e))
    data = all_bills(session, month=chosen, currency=services.settings.currency, prices=services.prices)
    names = {t.id: t.name for t in list_tenants(session)}
    total = sum((b.total_cost for b in data), Decimal(0))
    shown, page, pages = page_of(data, page, console_state(request).config.page_size)
    return render(request, "bills.html", viewer, bills=shown, names=names, month=str(chosen), total=total,
                  page=page, pages=pages, currency=services.settings.currency)


@router.get("/bills.csv")
def bills_csv(request: Request, viewer: AdminViewerDep, services: ServicesDep, month: str | None = None) -> Response:
    """Every ledger row of the month (the admin API's usage.csv)."""
    try:
        chosen = parse_month(month or None)
    except APIError as e:
        return error_page(request, viewer, e.status, in_words(e))
    return StreamingResponse(usage_csv(services.database, period=chosen.period), media_type="text/csv",
                             headers={"Content-Disposition": f'attachment; filename="usage-{chosen}.csv"'})
