"""Who is looking at a page: the session behind the cookie, checked on every request."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from gateway.audit.auditor import Auditor
from gateway.console.config import COOKIE
from gateway.console.errors import Forbidden, SignInRequired
from gateway.console.session import ConsoleSession
from gateway.console.state import console_state
from gateway.crud.keys import get_key
from gateway.crud.tenants import get_tenant
from gateway.db.types import utcnow
from gateway.security.admin_key import admin_actor


@dataclass(frozen=True, slots=True)
class Viewer:
    session: ConsoleSession
    actor: str  # in the audit log: "console:" + the credential's actor
    csrf_token: str
    tenant_name: str | None = None

    @property
    def is_admin(self) -> bool:
        return self.session.is_admin

    def auditor(self, request: Request) -> Auditor:
        return Auditor(actor=self.actor, request_id=getattr(request.state, "request_id", None))

    def may_read_tenant(self, tenant_id: str) -> bool:
        return self.is_admin or self.session.tenant_id == tenant_id


def _tenant_name(request: Request, session: ConsoleSession) -> str:
    """A tenant's session lasts only while its key and tenant do: a revoked or expired key, or a disabled
    tenant, signs it out at once."""
    with request.app.state.services.database.session() as db:
        key = get_key(db, key_id=session.key_id)
        tenant = get_tenant(db, tenant_id=session.tenant_id)
        if key is None or tenant is None or key.tenant_id != tenant.id or key.revoked_at is not None \
                or (key.expires_at is not None and key.expires_at <= utcnow()) or tenant.status != "active":
            raise SignInRequired()
        return tenant.name


def current_viewer(request: Request) -> Viewer:
    state = console_state(request)
    session = state.sessions.decode(request.cookies.get(COOKIE), now=time.time())
    if session is None or state.revocations.revoked(session):
        raise SignInRequired()
    if session.is_admin:
        actor = "console:" + admin_actor(request.app.state.services.admin_key)
        return Viewer(session, actor, state.csrf.token(session.sid))
    name = _tenant_name(request, session)
    return Viewer(session, f"console:tenant:{session.tenant_id}", state.csrf.token(session.sid), name)


ViewerDep = Annotated[Viewer, Depends(current_viewer)]


def admin_viewer(viewer: ViewerDep) -> Viewer:
    if not viewer.is_admin:
        raise Forbidden("This page is for the operator: sign in with the admin key to open it.")
    return viewer


AdminViewerDep = Annotated[Viewer, Depends(admin_viewer)]


def tenant_reader(tenant_id: str, viewer: ViewerDep) -> Viewer:
    """The admin, or the tenant itself; anyone else gets 403 (before anything is looked up)."""
    if not viewer.may_read_tenant(tenant_id):
        raise Forbidden("You may only open your own tenant's pages.")
    return viewer


TenantReaderDep = Annotated[Viewer, Depends(tenant_reader)]


async def checked_form(request: Request, viewer: ViewerDep) -> dict[str, str]:
    """The posted form, once its CSRF token matches the session's; else 403."""
    form = await request.form()
    given = form.get("csrf_token")
    if not isinstance(given, str) or not console_state(request).csrf.valid(viewer.session.sid, given):
        raise Forbidden("The form's security token is missing or out of date: reload the page and try again.")
    return {k: v for k, v in form.items() if isinstance(v, str)}


FormDep = Annotated[dict[str, str], Depends(checked_form)]
