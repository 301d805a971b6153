"""One tenant: its keys (create, shown once; revoke), its bill for a month exactly as the admin API gives it,
a daily tokens and cost chart, the usage CSV. A tenant signed in with its own key reads its page only."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response, StreamingResponse

from gateway.billing.bills import tenant_bill, usage_csv
from gateway.console import tenants as tenants_page
from gateway.console.forms import FormError, in_words, parse
from gateway.console.render import error_page, render
from gateway.console.series import DAY_S, daily
from gateway.console.viewer import AdminViewerDep, FormDep, TenantReaderDep, Viewer
from gateway.crud.keys import get_key, list_keys
from gateway.crud.usage_buckets import usage_buckets
from gateway.domain.errors import APIError
from gateway.schemas.admin import KeyCreate
from gateway.services.deps import ServicesDep, SessionDep
from gateway.services.keys import issue_key, revoke_by_id
from gateway.services.periods import parse_month
from gateway.services.tenants import tenant_or_404

router = APIRouter()


def _page(request: Request, viewer: Viewer, session, services, tenant_id: str, month_text: str | None, *,
          status: int = 200, error: str | None = None, new_key: str | None = None) -> Response:
    try:
        tenant = tenant_or_404(session, tenant_id)
        month = parse_month(month_text or None)
    except APIError as e:
        return error_page(request, viewer, e.status, in_words(e))
    bill = tenant_bill(session, tenant_id=tenant_id, month=month, currency=services.settings.currency,
                       prices=services.prices)
    chart = daily(usage_buckets(session, start=month.start, end=month.end, step_s=DAY_S, tenant_id=tenant_id),
                  start=month.start, end=month.end)
    return render(request, "tenant.html", viewer, status=status, error=error, tenant=tenant, bill=bill,
                  bill_json=bill.model_dump_json(), month=str(month), chart=chart, new_key=new_key,
                  keys=list_keys(session, tenant_id=tenant_id))


@router.get("/tenants/{tenant_id}")
def tenant(request: Request, tenant_id: str, viewer: TenantReaderDep, session: SessionDep, services: ServicesDep,
           month: str | None = None) -> Response:
    """Keys, the month's bill and its daily chart."""
    return _page(request, viewer, session, services, tenant_id, month)


@router.get("/tenants/{tenant_id}/usage.csv")
def usage(request: Request, tenant_id: str, viewer: TenantReaderDep, session: SessionDep, services: ServicesDep,
          month: str | None = None) -> Response:
    """The month's ledger rows of this tenant as CSV (the admin API's usage.csv, one tenant)."""
    try:
        tenant_or_404(session, tenant_id)
        chosen = parse_month(month or None)
    except APIError as e:
        return error_page(request, viewer, e.status, in_words(e))
    return StreamingResponse(usage_csv(services.database, period=chosen.period, tenant_id=tenant_id),
                             media_type="text/csv",
                             headers={"Content-Disposition": f'attachment; filename="usage-{tenant_id}-{chosen}.csv"'})


@router.post("/tenants/{tenant_id}/edit")
def edit(request: Request, tenant_id: str, viewer: AdminViewerDep, form: FormDep, session: SessionDep,
         services: ServicesDep) -> Response:
    """Save limits, budget and status."""
    try:
        outcome = tenants_page.edit(request, viewer, form, session, services, tenant_id)
    except APIError as e:
        return error_page(request, viewer, e.status, in_words(e))
    if isinstance(outcome, str):
        return _page(request, viewer, session, services, tenant_id, None, status=400, error=outcome)
    return outcome


@router.post("/tenants/{tenant_id}/keys")
def create_key(request: Request, tenant_id: str, viewer: AdminViewerDep, form: FormDep, session: SessionDep,
               services: ServicesDep) -> Response:
    """Issue a key and show its secret on this one page."""
    values = {}
    if form.get("rpm", "").strip():
        values["rpm"] = form["rpm"].strip()
    if form.get("models", "").strip():
        values["models"] = [m.strip() for m in form["models"].split(",") if m.strip()]
    try:
        created = issue_key(session, services, viewer.auditor(request), tenant_id, parse(KeyCreate, values))
    except APIError as e:
        if e.status == 404:
            return error_page(request, viewer, 404, in_words(e))
        return _page(request, viewer, session, services, tenant_id, None, status=e.status, error=in_words(e))
    except FormError as e:
        return _page(request, viewer, session, services, tenant_id, None, status=400, error=in_words(e))
    return _page(request, viewer, session, services, tenant_id, None, new_key=created.key)


@router.post("/tenants/{tenant_id}/keys/{key_id}/revoke")
def revoke(request: Request, tenant_id: str, key_id: str, viewer: AdminViewerDep, form: FormDep,
           session: SessionDep, services: ServicesDep) -> Response:
    """Revoke one of this tenant's keys."""
    key = get_key(session, key_id=key_id)
    if key is None or key.tenant_id != tenant_id:
        return error_page(request, viewer, 404, f"Tenant {tenant_id!r} has no key {key_id!r}.")
    revoke_by_id(session, services, viewer.auditor(request), key_id)
    return RedirectResponse(f"/console/tenants/{tenant_id}?notice=key_revoked", status_code=303)
