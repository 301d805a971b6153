"""Stored responses, always scoped to one tenant: save (evicting the tenant's oldest past its cap), get, delete."""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from gateway.db.models.response import StoredResponse
from gateway.db.rowcount import rowcount


@dataclass(frozen=True, slots=True)
class Stored:
    """A stored response, decoded: the Response object and the conversation that led to its output."""
    id: str
    response: dict[str, Any]
    context: list[dict[str, str]]

    @property
    def output_text(self) -> str:
        return "".join(part.get("text", "") for item in self.response.get("output", [])
                       for part in item.get("content", []))


def save_response(session: Session, *, tenant_id: str, response_id: str, created_at: datetime,
                  response: dict[str, Any], context: list[dict[str, str]], cap: int) -> int:
    """Store one response and keep only the tenant's `cap` newest; returns how many old ones went. One
    transaction, so concurrent saves may leave a tenant over its cap by a few until its next save."""
    if cap < 1:
        raise ValueError("cap must be at least 1")
    with session.begin():
        held = session.scalar(select(func.count()).select_from(StoredResponse)
                              .where(StoredResponse.tenant_id == tenant_id)) or 0
        evicted = 0
        if held >= cap:
            oldest = select(StoredResponse.id).where(StoredResponse.tenant_id == tenant_id).order_by(
                StoredResponse.created_at, StoredResponse.id).limit(held - cap + 1)
            evicted = rowcount(session.execute(delete(StoredResponse).where(
                StoredResponse.id.in_(list(session.scalars(oldest)))))) or 0
        session.add(StoredResponse(id=response_id, tenant_id=tenant_id, created_at=created_at,
                                   response=_encode(response), context=_encode(context)))
    return evicted


def get_response(session: Session, *, tenant_id: str, response_id: str) -> Stored | None:
    """The tenant's response with this id; None when there is none (or it is another tenant's)."""
    row = session.scalar(select(StoredResponse).where(StoredResponse.id == response_id,
                                                      StoredResponse.tenant_id == tenant_id))
    if row is None:
        return None
    return Stored(row.id, json.loads(bytes(row.response)), json.loads(bytes(row.context)))


def delete_response(session: Session, *, tenant_id: str, response_id: str) -> bool:
    """True when the tenant had a response with this id (now gone)."""
    with session.begin():
        result = session.execute(delete(StoredResponse).where(StoredResponse.id == response_id,
                                                              StoredResponse.tenant_id == tenant_id))
    return bool(rowcount(result))


def count_responses(session: Session, *, tenant_id: str) -> int:
    return session.scalar(select(func.count()).select_from(StoredResponse)
                          .where(StoredResponse.tenant_id == tenant_id)) or 0


def _encode(value: Any) -> bytes:
    # ASCII with escapes: any text the client sent (control characters, NUL) encodes.
    return json.dumps(value, separators=(",", ":")).encode("ascii")
