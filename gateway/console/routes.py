"""Routes: each alias' weights (editable), per-version window metrics, promote and roll back, the audit trail."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from gateway.console.forms import in_words, page_of
from gateway.console.render import render
from gateway.console.state import console_state
from gateway.console.viewer import AdminViewerDep, FormDep, Viewer
from gateway.domain.errors import APIError
from gateway.services.deps import RouterDep
from gateway.services.routes import apply_change

router = APIRouter()
WEIGHT = "weight:"  # form fields weight:<version>


def _page(request: Request, viewer: Viewer, routes, *, page: int = 1, status: int = 200,
          error: str | None = None) -> Response:
    trail, page, pages = page_of(routes.audit(limit=1000), page, console_state(request).config.page_size)
    return render(request, "routes.html", viewer, status=status, error=error,
                  routes=list(routes.routes_snapshot().values()), trail=trail, page=page, pages=pages)


@router.get("/routes")
def routes_page(request: Request, viewer: AdminViewerDep, routes: RouterDep, page: int = 1) -> Response:
    """Every alias with its split, window metrics per version, and the change log."""
    return _page(request, viewer, routes, page=page)


def _weights(form: dict[str, str]) -> dict[str, object]:
    """Whole numbers as ints; anything else is passed on as typed, for the Router to refuse by name."""
    out: dict[str, object] = {}
    for field, value in form.items():
        if field.startswith(WEIGHT):
            text = value.strip()
            out[field[len(WEIGHT):]] = int(text) if text.lstrip("-").isdigit() else text
    return out


def _change(request: Request, viewer: Viewer, routes, notice: str, change, *args, **kwargs) -> Response:
    try:
        apply_change(change, *args, viewer.actor, request_id=getattr(request.state, "request_id", None), **kwargs)
    except APIError as e:
        return _page(request, viewer, routes, status=e.status, error=in_words(e))
    return RedirectResponse(f"/console/routes?notice={notice}", status_code=303)


@router.post("/routes/{alias}/weights")
def set_weights(request: Request, alias: str, viewer: AdminViewerDep, form: FormDep, routes: RouterDep) -> Response:
    """Replace the alias' split (percent, sum 100)."""
    return _change(request, viewer, routes, "route_saved", routes.set_weights, alias, _weights(form), None)


@router.post("/routes/{alias}/promote")
def promote(request: Request, alias: str, viewer: AdminViewerDep, form: FormDep, routes: RouterDep) -> Response:
    """All traffic to one version."""
    return _change(request, viewer, routes, "route_promoted", routes.promote, alias, form.get("version", ""))


@router.post("/routes/{alias}/rollback")
def rollback(request: Request, alias: str, viewer: AdminViewerDep, form: FormDep, routes: RouterDep) -> Response:
    """Canaries to 0 %, the stable version to 100 %."""
    return _change(request, viewer, routes, "route_rolled_back", routes.rollback, alias)
