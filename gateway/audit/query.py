"""Reading the log: filters and a seq cursor, newest first."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.audit.record import AuditRecord
from gateway.audit.table import AuditLogRow

MAX_LIMIT = 1000


@dataclass(frozen=True, slots=True)
class AuditQuery:
    """Every filter is optional; `action` ending in ".*" matches a prefix ("tenant.*"). Newest first:
    `after` is the seq of the last row of the previous page (rows with a lower seq come next)."""
    since: datetime | None = None  # at >= since
    until: datetime | None = None  # at < until
    actor: str | None = None
    action: str | None = None
    target_type: str | None = None
    target_id: str | None = None
    after: int | None = None
    limit: int = 100

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_LIMIT}")
        if self.after is not None and self.after < 0:
            raise ValueError("after must be a seq (0 or more)")
        if self.target_id is not None and self.target_type is None:
            raise ValueError("a target id needs its type")


@dataclass(frozen=True, slots=True)
class AuditPage:
    data: list[AuditRecord]
    has_more: bool


def to_record(row: AuditLogRow) -> AuditRecord:
    return AuditRecord(seq=row.seq, at=row.at, actor=row.actor, action=row.action, target_type=row.target_type,
                       target_id=row.target_id, request_id=row.request_id, before=row.before, after=row.after,
                       prev_hash=row.prev_hash, hash=row.hash)


def list_records(session: Session, query: AuditQuery) -> AuditPage:
    q = query
    stmt = select(AuditLogRow).order_by(AuditLogRow.seq.desc()).limit(q.limit + 1)
    if q.since is not None:
        stmt = stmt.where(AuditLogRow.at >= q.since)
    if q.until is not None:
        stmt = stmt.where(AuditLogRow.at < q.until)
    if q.actor is not None:
        stmt = stmt.where(AuditLogRow.actor == q.actor)
    if q.action is not None and q.action.endswith(".*"):
        prefix = q.action[:-1]  # keeps the dot: "tenant." never matches "tenants.x"
        stmt = stmt.where(AuditLogRow.action.startswith(prefix, autoescape=True))
    elif q.action is not None:
        stmt = stmt.where(AuditLogRow.action == q.action)
    if q.target_type is not None:
        stmt = stmt.where(AuditLogRow.target_type == q.target_type)
    if q.target_id is not None:
        stmt = stmt.where(AuditLogRow.target_id == q.target_id)
    if q.after is not None:
        stmt = stmt.where(AuditLogRow.seq < q.after)
    rows = [to_record(r) for r in session.scalars(stmt)]
    return AuditPage(rows[:q.limit], len(rows) > q.limit)
