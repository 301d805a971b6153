"""Once per crossing: a row of alert_marks per (kind, subject, period). Of several gateways racing to insert the
same mark, exactly one insert lands (the primary key); only that one emits the event, in the same transaction."""
from __future__ import annotations

from sqlalchemy import Connection, delete
from sqlalchemy.dialects import postgresql, sqlite

from gateway.db.models.alert_mark import AlertMark
from gateway.db.types import utcnow

_INSERT = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


def mark_once(conn: Connection, *, kind: str, subject: str, period: str) -> bool:
    """Insert the mark; True only for the insert that made it (an existing one is left alone)."""
    stmt = (_INSERT[conn.dialect.name](AlertMark)
            .values(kind=kind, subject=subject, period=period, created_at=utcnow())
            .on_conflict_do_nothing(index_elements=["kind", "subject", "period"])
            .returning(AlertMark.kind))  # rowcount is not reliable here across drivers; a returned row is
    return conn.execute(stmt).first() is not None


def unmark(conn: Connection, *, kind: str, subject: str, period: str) -> bool:
    """Re-arm: the next crossing fires again. True when a mark was there."""
    done = conn.execute(delete(AlertMark).where(AlertMark.kind == kind, AlertMark.subject == subject,
                                                AlertMark.period == period))
    return done.rowcount > 0
