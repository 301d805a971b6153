"""Sign in (the admin key, or one of a tenant's own API keys) and sign out."""
from __future__ import annotations

import asyncio
import secrets
import time
from contextlib import AbstractAsyncContextManager

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from gateway.audit.auditor import Auditor
from gateway.audit.record import Target
from gateway.console.config import COOKIE, LOGIN_COOKIE
from gateway.console.render import render
from gateway.console.session import ConsoleSession
from gateway.console.state import console_state
from gateway.console.viewer import FormDep, ViewerDep
from gateway.events.events import SessionRevoked
from gateway.security.admin_key import admin_actor, admin_key_matches
from gateway.security.auth_throttle import Attempt, Throttled
from gateway.security.authenticator import AuthUnavailable, InvalidKey
from gateway.services.deps import client_address

router = APIRouter()


def _cookie(response: Response, request: Request, name: str, value: str, max_age: int) -> None:
    """HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it), Secure over HTTPS."""
    response.set_cookie(name, value, max_age=max_age, path="/console", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")


def _form(request: Request, *, status: int = 200, error: str | None = None) -> Response:
    nonce = request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(16)
    response = render(request, "login.html", None, status=status, error=error,
                      csrf_token=console_state(request).csrf.token("login:" + nonce))
    _cookie(response, request, LOGIN_COOKIE, nonce, 3600)
    return response


@router.get("/login")
def login_form(request: Request) -> Response:
    """The sign-in form."""
    return _form(request)


async def _session_for(request: Request, credential: str, ttl_s: int,
                       lookup_slot: AbstractAsyncContextManager) -> tuple[ConsoleSession, Auditor, Target]:
    services = request.app.state.services
    expires = time.time() + ttl_s
    rid = getattr(request.state, "request_id", None)
    if admin_key_matches(credential, services.admin_key):
        actor = "console:" + admin_actor(services.admin_key)
        return ConsoleSession("admin", expires), Auditor(actor, rid), Target("console", "admin")
    # InvalidKey, AuthUnavailable
    principal = await services.authenticator.authenticate(credential, lookup_slot=lookup_slot)
    session = ConsoleSession("tenant", expires, tenant_id=principal.tenant_id, key_id=principal.key_id)
    return session, Auditor(f"console:tenant:{principal.tenant_id}", rid), Target("tenant", principal.tenant_id)


@router.post("/login")
async def login(request: Request) -> Response:
    """Check the form's token and the credential; set the session cookie and record the sign-in."""
    state, services = console_state(request), request.app.state.services
    form = await request.form()
    nonce = request.cookies.get(LOGIN_COOKIE)
    if not state.csrf.valid("login:" + nonce if nonce else None, form.get("csrf_token")):
        return _form(request, status=403, error="The form's security token is missing or out of date: "
                                                "try again on this page.")
    credential = str(form.get("credential") or "").strip()
    if not credential:
        return _form(request, status=400, error="Enter the admin key or one of your API keys.")
    # The API's throttle (gateway.security.auth_throttle): a valid key signs in even from a throttled address.
    attempt = Attempt.of(client_address(request), credential)
    try:
        session, auditor, target = await services.auth_throttle.check(
            attempt, lambda slot: _session_for(request, credential, state.config.session_ttl_s, slot))
    except Throttled:
        return _form(request, status=429, error="Too many failed sign-ins from this address: wait a minute.")
    except InvalidKey:
        return _form(request, status=401, error="That key was not accepted: check it and try again.")
    except AuthUnavailable:
        return _form(request, status=503, error="The database cannot be reached right now: try again shortly.")
    await asyncio.to_thread(auditor.record_alone, services.database, "console.sign_in", target,
                            after={"role": session.role, "tenant_id": session.tenant_id, "key_id": session.key_id})
    home = "/console/" if session.is_admin else f"/console/tenants/{session.tenant_id}"
    response = RedirectResponse(home, status_code=303)
    _cookie(response, request, COOKIE, state.sessions.encode(session), state.config.session_ttl_s)
    response.delete_cookie(LOGIN_COOKIE, path="/console")
    return response


@router.post("/logout")
async def logout(request: Request, viewer: ViewerDep, form: FormDep) -> Response:
    """End the session on every replica and in the browser."""
    console_state(request).revocations.revoke(viewer.session)
    request.app.state.services.events.publish(SessionRevoked(viewer.session.sid, viewer.session.expires_at))
    response = RedirectResponse("/console/login?notice=signed_out", status_code=303)
    response.delete_cookie(COOKIE, path="/console", httponly=True, samesite="strict")
    return response

