"""`Auditor`: who is acting and in which request, so recording an admin action is one line."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from gateway.audit.record import AuditRecord, Change, Target
from gateway.audit.snapshot import describe, snapshot
from gateway.audit.writer import append
from gateway.crud.commit import AuditHook
from gateway.db.database import Database


@dataclass(frozen=True, slots=True)
class Auditor:
    actor: str  # from the credential (gateway.security.admin_key.admin_actor), never a client header
    request_id: str | None = None

    def __post_init__(self) -> None:
        if not self.actor:
            raise ValueError("an Auditor needs an actor")

    def record(self, session: Session, action: str, target: Target, *, before: Any = None,
               after: Any = None) -> AuditRecord:
        """Append a row in `session`'s open transaction: the caller's commit applies the change and its
        row together. `before`/`after` are JSON-safe values (Decimals, datetimes converted)."""
        return append(session, Change(self.actor, action, target, self.request_id, before, after))

    def on_write(self, action: str, *, before: Any = None) -> AuditHook:
        """A hook for a CRUD write (gateway.crud.commit): it records `action` on the row the write made or
        changed, just before the write commits. `before` is the row as it is now, snapshotted at once,
        since the write changes it in place."""
        was = snapshot(before)

        def hook(session: Session, row: Any) -> None:
            target, now = describe(row)
            self.record(session, action, target, before=was, after=now)
        return hook

    def record_alone(self, database: Database, action: str, target: Target, *, before: Any = None,
                     after: Any = None) -> AuditRecord:
        """In a transaction of its own, for a change that does not live in the gateway's tables (the
        semantic cache's memory): the caller applies the change first, then records it."""
        with database.session() as session, session.begin():
            return self.record(session, action, target, before=before, after=after)
