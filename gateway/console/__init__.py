"""The web console (/console): server-rendered pages over the same functions as the admin API."""
from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from gateway.console import (
    bills,
    cache,
    economics,
    overview,
    prompts,
    routes,
    signin,
    tenant,
    tenants,
    waste,
    workers,
)
from gateway.console.config import COOKIE
from gateway.console.errors import Forbidden, SignInRequired
from gateway.console.render import HERE, error_page

router = APIRouter(prefix="/console", include_in_schema=False)
for _module in (signin, overview, tenants, tenant, waste, bills, economics, routes, cache, workers, prompts):
    router.include_router(_module.router)


async def _sign_in(request: Request, exc: SignInRequired) -> Response:
    response = RedirectResponse("/console/login", status_code=303)
    if request.cookies.get(COOKIE):  # expired, forged or its key revoked: forget it
        response.delete_cookie(COOKIE, path="/console")
    return response


async def _forbidden(request: Request, exc: Forbidden) -> Response:
    return error_page(request, None, 403, exc.message)


def install_console(app: FastAPI) -> None:
    """The pages, their static files (vendored: nothing is fetched at run time) and their two answers to a
    missing or insufficient session: 303 to the sign-in form, or a 403 page."""
    app.include_router(router)
    app.mount("/console/static", StaticFiles(directory=str(HERE / "static")), name="console-static")
    app.add_exception_handler(SignInRequired, _sign_in)
    app.add_exception_handler(Forbidden, _forbidden)
