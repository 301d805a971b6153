"""Committing a CRUD write together with its audit row (gateway.audit.Auditor.on_write builds the hook)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

# Called with the session and the written row after the flush (ids and defaults exist) and before the commit.
AuditHook = Callable[[Session, Any], None]


def commit(session: Session, row: Any, audit: AuditHook | None = None) -> None:
    """Commit the write; with `audit`, its audit row goes in the same transaction (both or neither)."""
    if audit is not None:
        session.flush()
        audit(session, row)
    session.commit()
