"""Pages from templates: every page gets who is looking (for the menu) and its CSRF token (for forms)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from gateway.console.viewer import Viewer
from gateway.schemas.billing import decimal_text

HERE = Path(__file__).resolve().parent
templates = Jinja2Templates(directory=str(HERE / "templates"))
templates.env.filters["money"] = lambda v: "" if v is None else decimal_text(v)
templates.env.filters["num"] = lambda v, digits=2: "–" if v is None else f"{v:,.{digits}f}"
templates.env.filters["limit"] = lambda v: "unlimited" if v is None else f"{v:,}"

# Notices a redirect may name (?notice=...): a fixed list, so a link cannot put words on the page.
NOTICES = {
    "tenant_created": "Tenant created.",
    "tenant_updated": "Tenant saved.",
    "key_revoked": "Key revoked: it is refused from the next request on.",
    "route_saved": "Weights saved: the router follows them from the next request on.",
    "route_promoted": "Version promoted: it now takes all traffic.",
    "route_rolled_back": "Rolled back: canaries are at 0 %, the stable version takes all traffic.",
    "cache_invalidated": "Cache entries dropped on every replica.",
    "signed_out": "You are signed out.",
}


def render(request: Request, template: str, viewer: Viewer | None, *, status: int = 200,
           error: str | None = None, **context: Any) -> HTMLResponse:
    notice = NOTICES.get(request.query_params.get("notice", ""))
    return templates.TemplateResponse(request, template, {
        "viewer": viewer, "csrf_token": viewer.csrf_token if viewer else context.pop("csrf_token", ""),
        "notice": notice, "error": error, **context}, status_code=status)


def error_page(request: Request, viewer: Viewer | None, status: int, message: str) -> HTMLResponse:
    """A page that could not be shown (no such tenant, a bad month), with the reason in words."""
    return render(request, "error.html", viewer, status=status, error=message)
