"""Overview: traffic, errors, time to first token, cache hits and spend over the last hour or day."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from gateway.console.render import render
from gateway.console.series import DAY_S, WINDOWS, columns, headline
from gateway.console.viewer import ViewerDep
from gateway.crud.usage import totals_by_model
from gateway.crud.usage_buckets import first_token_times, usage_buckets
from gateway.db.types import utcnow
from gateway.domain.period import Month
from gateway.services.deps import ServicesDep, SessionDep

router = APIRouter()


def _figures(session, window: str) -> dict:
    span, step = WINDOWS[window]
    now = utcnow()
    # Buckets end on a step boundary so a refresh moves the chart by whole buckets.
    end = datetime.fromtimestamp((int(now.timestamp()) // step + 1) * step, tz=now.tzinfo)
    start = end - span
    sums = usage_buckets(session, start=start, end=end, step_s=step)
    ttfts = first_token_times(session, start=start, end=end, step_s=step)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    today = sum((b.cost for b in usage_buckets(session, start=midnight, end=end, step_s=DAY_S)), Decimal(0))
    month = sum((t.cost for t in totals_by_model(session, period=Month.containing(now).period)), Decimal(0))
    return {"window": window, "headline": headline(sums, [ms for _, ms in ttfts], span),
            "chart": columns(sums, ttfts, start=start, end=end, step_s=step),
            "spend_today": today, "spend_month": month, "updated": now}


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
