"""The ledger rows of a recent window, thin: what the console's charts are drawn from."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.db.models.usage import Usage


@dataclass(frozen=True, slots=True)
class UsagePoint:
    at: datetime
    status: str  # ok | error | aborted | truncated
    prompt_tokens: int
    completion_tokens: int
    cost: Decimal
    cache_hit: bool
    ttft_ms: float | None
    version: str | None


def usage_points(session: Session, *, start: datetime, end: datetime,
                 tenant_id: str | None = None) -> list[UsagePoint]:
    """Every ledger row in [start, end), oldest first (one tenant's when tenant_id is given)."""
    stmt = (select(Usage.created_at, Usage.status, Usage.prompt_tokens, Usage.completion_tokens, Usage.cost,
                   Usage.cache_hit, Usage.ttft_ms, Usage.version)
            .where(Usage.created_at >= start, Usage.created_at < end).order_by(Usage.created_at))
    if tenant_id is not None:
        stmt = stmt.where(Usage.tenant_id == tenant_id)
    return [UsagePoint(at, status, p or 0, c or 0, cost or Decimal(0), bool(hit), ttft, version)
            for at, status, p, c, cost, hit, ttft, version in session.execute(stmt)]
