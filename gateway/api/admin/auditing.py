"""The request's Auditor: the actor from the admin credential, the request id from the middleware."""
from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from gateway.api.deps import AdminDep
from gateway.audit.auditor import Auditor
from gateway.security.admin_key import admin_actor


def get_auditor(request: Request, _: AdminDep) -> Auditor:
    """Never a client-sent header (an `x-tollgate-actor` is ignored): the credential that authorised it."""
    return Auditor(actor=admin_actor(request.app.state.services.admin_key),
                   request_id=getattr(request.state, "request_id", None))


AuditorDep = Annotated[Auditor, Depends(get_auditor)]
