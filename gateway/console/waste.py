"""A tenant's waste report for a month (GET /admin/tenants/{id}/waste's function): how much of its input repeats,
by the engine's prefix cache and by the gateway's own hashing, what the semantic cache spared, and the prompts it
repeated most. Admins only: the previews are the tenant's own prompts."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from gateway.billing.waste import waste_report
from gateway.console.forms import in_words
from gateway.console.render import error_page, render
from gateway.console.viewer import AdminViewerDep
from gateway.domain.errors import APIError
from gateway.services.deps import SessionDep
from gateway.services.periods import parse_month
from gateway.services.tenants import tenant_or_404

router = APIRouter()
KINDS = {"system": "system prompt", "prompt": "whole prompt"}


@router.get("/tenants/{tenant_id}/waste")
def waste(request: Request, tenant_id: str, viewer: AdminViewerDep, session: SessionDep,
          month: str | None = None) -> Response:
    """Repeated input, semantic-cache savings and the longest repeated prompts of a tenant's month."""
    try:
        tenant = tenant_or_404(session, tenant_id)
        chosen = parse_month(month or None)
    except APIError as e:
        return error_page(request, viewer, e.status, in_words(e))
    report = waste_report(session, tenant_id=tenant_id, month=chosen)
    return render(request, "waste.html", viewer, tenant=tenant, report=report, month=str(chosen), kinds=KINDS)
