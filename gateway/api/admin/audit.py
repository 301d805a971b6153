"""Admin: the audit log of admin actions (GET /admin/audit), newest first."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query

from gateway.audit.query import MAX_LIMIT, AuditQuery, list_records
from gateway.domain.errors import invalid_request
from gateway.services.deps import SessionDep

router = APIRouter()
SEQ_MAX = 2**63 - 1  # a BIGINT: a larger cursor would be a database error, not a 400


def _instant(text: str | None, param: str) -> datetime | None:
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except (ValueError, OverflowError) as e:  # an offset can push a valid local time past year 9999 in UTC
        raise invalid_request(f"{param} must be an ISO 8601 time, got {text!r}", param=param) from e


def audit_query(since: str | None = None, until: str | None = None, actor: str | None = None,
                action: str | None = None, target: str | None = None,
                limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 100,
                after: Annotated[int | None, Query(ge=0, le=SEQ_MAX)] = None) -> AuditQuery:
    """?since=&until= (ISO 8601; naive is UTC; since inclusive, until exclusive), ?actor=, ?action= (exact, or
    a prefix as "tenant.*"), ?target=TYPE or TYPE:ID, ?limit= (1-1000), ?after=SEQ (the next page)."""
    target_type, _, target_id = (target or "").partition(":")
    if target is not None and not target_type:
        raise invalid_request("target must read TYPE or TYPE:ID", param="target")
    start, end = _instant(since, "since"), _instant(until, "until")
    if start is not None and end is not None and start >= end:
        raise invalid_request("since must be before until", param="since")
    return AuditQuery(since=start, until=end, actor=actor, action=action, target_type=target_type or None,
                      target_id=target_id or None, after=after, limit=limit)


@router.get("/audit")
def audit(query: Annotated[AuditQuery, Depends(audit_query)], session: SessionDep) -> dict:
    """Audit rows, newest first; `has_more` means `?after=<seq of the last row>` has the next page."""
    page = list_records(session, query)
    return {"object": "list", "data": [r.to_dict() for r in page.data], "has_more": page.has_more}
