"""Tenants: the list with month-to-date tokens and spend; create; edit limits, budgets and status."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from gateway.billing.bills import all_bills
from gateway.console.forms import FormError, blank_is_none, in_words, page_of, parse
from gateway.console.render import render
from gateway.console.state import console_state
from gateway.console.viewer import AdminViewerDep, FormDep, Viewer
from gateway.crud.tenants import list_tenants
from gateway.db.types import utcnow
from gateway.domain.errors import APIError
from gateway.domain.period import Month
from gateway.schemas.admin import TenantCreate, TenantUpdate
from gateway.services.deps import ServicesDep, SessionDep
from gateway.services.tenants import add_tenant, change_tenant, tenant_or_404

router = APIRouter()
LIMITS = ("rpm", "tpm", "monthly_token_budget")


def _list(request: Request, viewer: Viewer, session, services, *, page: int = 1, status: int = 200,
          error: str | None = None, form: dict | None = None) -> Response:
    month = Month.containing(utcnow())
    bills = {b.tenant_id: b for b in all_bills(session, month=month, currency=services.settings.currency,
                                                      prices=services.prices)}
    rows = [(t, bills.get(t.id)) for t in list_tenants(session)]
    shown, page, pages = page_of(rows, page, console_state(request).config.page_size)
    return render(request, "tenants.html", viewer, status=status, error=error, rows=shown, page=page,
                  pages=pages, month=str(month), form=form or {}, currency=services.settings.currency)


@router.get("/tenants")
def tenants(request: Request, viewer: AdminViewerDep, session: SessionDep, services: ServicesDep,
            page: int = 1) -> Response:
    """Every tenant with status, limits, and this month's tokens and spend."""
    return _list(request, viewer, session, services, page=page)


@router.post("/tenants")
def create(request: Request, viewer: AdminViewerDep, form: FormDep, session: SessionDep,
           services: ServicesDep) -> Response:
    """Create a tenant from the form (the admin API's TenantCreate rules)."""
    try:
        body = parse(TenantCreate, {"name": form.get("name", "").strip(), **blank_is_none(form, LIMITS)})
        tenant = add_tenant(session, viewer.auditor(request), body)
    except (APIError, FormError) as e:
        return _list(request, viewer, session, services, status=getattr(e, "status", 400), error=in_words(e),
                     form=form)
    return RedirectResponse(f"/console/tenants/{tenant.id}?notice=tenant_created", status_code=303)


def edit(request: Request, viewer: Viewer, form: dict[str, str], session, services, tenant_id: str) -> Response | str:
    """Apply the edit form (limits, budget, status); the redirect, or the error in words."""
    tenant_or_404(session, tenant_id)
    values = {**blank_is_none(form, LIMITS)}
    if form.get("status"):
        values["status"] = form["status"]
    try:
        body = parse(TenantUpdate, values)
        change_tenant(session, services, viewer.auditor(request), tenant_id, body.model_dump(exclude_unset=True))
    except (APIError, FormError) as e:
        return in_words(e)
    return RedirectResponse(f"/console/tenants/{tenant_id}?notice=tenant_updated", status_code=303)
