"""Stored prompts: each with its owner (the one tenant whose keys can serve it, or shared) and latest version,
from the same store the admin API reads."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from gateway.console.forms import page_of
from gateway.console.render import render
from gateway.console.state import console_state
from gateway.console.viewer import AdminViewerDep
from gateway.crud.tenants import list_tenants
from gateway.prompts import store
from gateway.services.deps import SessionDep

router = APIRouter()


@router.get("/prompts")
def prompts(request: Request, viewer: AdminViewerDep, session: SessionDep, page: int = 1) -> Response:
    """Every prompt with its owner and latest version."""
    names = {t.id: t.name for t in list_tenants(session)}
    rows = [(name, owner, names.get(owner, owner) if owner else None, latest, created)
            for name, owner, created, latest in store.list_names(session)]
    shown, page, pages = page_of(rows, page, console_state(request).config.page_size)
    return render(request, "prompts.html", viewer, rows=shown, page=page, pages=pages)
