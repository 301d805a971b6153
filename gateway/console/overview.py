"""Overview: traffic, errors, time to first token, cache hits and spend over the last hour or day."""
from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from gateway.api.deps import ServicesDep, SessionDep
from gateway.billing.period import Month
from gateway.console.render import render
from gateway.console.series import WINDOWS, buckets, headline
from gateway.console.viewer import ViewerDep
from gateway.crud.usage import totals_by_model
from gateway.crud.usage_window import usage_points
from gateway.db.types import utcnow

router = APIRouter()


def _figures(session, window: str) -> dict:
    span, step = WINDOWS[window]
    now = utcnow()
    # Buckets end on a step boundary so a refresh moves the chart by whole buckets.
    end = datetime.fromtimestamp((int(now.timestamp()) // step + 1) * step, tz=now.tzinfo)
    start = end - span
    points = usage_points(session, start=start, end=end)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    today = sum((p.cost for p in points if p.at >= midnight), Decimal(0)) if window == "day" else sum(
        (p.cost for p in usage_points(session, start=midnight, end=end)), Decimal(0))
    month = sum((t.cost for t in totals_by_model(session, period=Month.containing(now).period)), Decimal(0))
    return {"window": window, "headline": headline(points, span), "chart": buckets(points, start=start, end=end,
            step_s=step), "spend_today": today, "spend_month": month, "updated": now}


def _window(window: str | None) -> str:
    return window if window in WINDOWS else "hour"


@router.get("/")
def overview(request: Request, viewer: ViewerDep, session: SessionDep, services: ServicesDep,
             window: str | None = None) -> Response:
    """The operator's first page; a tenant goes to its own."""
    if not viewer.is_admin:
        return RedirectResponse(f"/console/tenants/{viewer.session.tenant_id}", status_code=303)
    return render(request, "overview.html", viewer, currency=services.settings.currency,
                  **_figures(session, _window(window)))


@router.get("/overview/figures")
def figures(request: Request, viewer: ViewerDep, session: SessionDep, services: ServicesDep,
            window: str | None = None) -> Response:
    """The headline figures alone, for htmx to swap in every few seconds."""
    if not viewer.is_admin:
        return RedirectResponse(f"/console/tenants/{viewer.session.tenant_id}", status_code=303)
    return render(request, "_figures.html", viewer, currency=services.settings.currency,
                  **_figures(session, _window(window)))
