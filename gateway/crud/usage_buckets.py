"""The ledger summed per time bucket in the database (the console's charts): a window of a day at a busy
gateway is hundreds of thousands of rows, so only one row per bucket, and the first-token times, come back."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from sqlalchemy import BigInteger, Integer, case, cast, func, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from gateway.db.models.usage import Usage


def _sqlite_index(column, start_s: int, step_s: int) -> ColumnElement:
    # SQLite keeps naive UTC text; strftime('%s') reads it as whole UTC seconds. `//`, not `/`: SQLAlchemy 2's `/`
    # is true division even between integers.
    return (cast(func.strftime("%s", column), Integer) - start_s) // step_s


def _postgres_index(column, start_s: int, step_s: int) -> ColumnElement:
    return cast(func.floor((func.extract("epoch", column) - start_s) / step_s), BigInteger)  # floor, not round


# The bucket index of a row: (its Unix second - start) // step, in each dialect's own words.
BUCKET_INDEX: dict[str, Callable[[object, int, int], ColumnElement]] = {
    "sqlite": _sqlite_index, "postgresql": _postgres_index}


@dataclass(frozen=True, slots=True)
class Bucket:
    index: int  # 0 = [start, start + step)
    requests: int
    errors: int
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    cost: Decimal


def _index(session: Session, start: datetime, step_s: int) -> ColumnElement:
    dialect = session.get_bind().dialect.name
    if dialect not in BUCKET_INDEX:
        raise RuntimeError(f"usage buckets support sqlite and postgresql, not {dialect}")
    return BUCKET_INDEX[dialect](Usage.created_at, int(start.timestamp()), step_s).label("bucket")


def _window(stmt, start: datetime, end: datetime, tenant_id: str | None):
    stmt = stmt.where(Usage.created_at >= start, Usage.created_at < end)
    return stmt if tenant_id is None else stmt.where(Usage.tenant_id == tenant_id)


def usage_buckets(session: Session, *, start: datetime, end: datetime, step_s: int,
                  tenant_id: str | None = None) -> list[Bucket]:
    """Sums per bucket of [start, end) that has rows, in bucket order (one tenant's when tenant_id is given)."""
    bucket = _index(session, start, step_s)
    stmt = _window(select(bucket, func.count(Usage.id),
                          func.coalesce(func.sum(case((Usage.status == "error", 1), else_=0)), 0),
                          func.coalesce(func.sum(case((Usage.cache_hit.is_(True), 1), else_=0)), 0),
                          func.coalesce(func.sum(Usage.prompt_tokens), 0),
                          func.coalesce(func.sum(Usage.completion_tokens), 0),
                          func.sum(Usage.cost)), start, end, tenant_id).group_by(bucket).order_by(bucket)
    return [Bucket(int(i), int(n), int(e), int(h), int(p), int(c), cost or Decimal(0))
            for i, n, e, h, p, c, cost in session.execute(stmt)]


def first_token_times(session: Session, *, start: datetime, end: datetime, step_s: int,
                      tenant_id: str | None = None) -> list[tuple[int, float]]:
    """(bucket, ttft_ms) of every generated answer in [start, end); cache hits have no first token to time."""
    bucket = _index(session, start, step_s)
    stmt = _window(select(bucket, Usage.ttft_ms).where(Usage.ttft_ms.is_not(None), Usage.cache_hit.is_(False)),
                   start, end, tenant_id)
    return [(int(i), float(t)) for i, t in session.execute(stmt)]
