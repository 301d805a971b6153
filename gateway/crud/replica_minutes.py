"""Replica-minutes: one row per (version, pool, minute), written idempotently by every gateway that watches the
pool, and the sums the economics report reads."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from gateway.db.models.replica_minute import ReplicaMinute

_INSERT = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}
_GREATEST = {"sqlite": func.max, "postgresql": func.greatest}  # two-argument max of a row's old and new value


def record_replica_minute(connection: Connection, *, pool: str, minute: datetime, counts: dict[str, int]) -> None:
    """Upsert each version's replica count for the minute. The same minute written again (a second gateway, a
    second sample) keeps the larger count: replicas are billed per minute they were up, never added twice."""
    if not counts:
        return
    dialect = connection.dialect.name
    insert = _INSERT.get(dialect)
    if insert is None:
        raise RuntimeError(f"replica minutes support sqlite and postgresql, not {dialect}")
    stmt = insert(ReplicaMinute)
    stmt = stmt.on_conflict_do_update(index_elements=["version", "pool", "minute"],
                                      set_={"replicas": _GREATEST[dialect](ReplicaMinute.replicas,
                                                                           stmt.excluded.replicas)})
    connection.execute(stmt, [{"version": v, "pool": pool, "minute": minute, "replicas": n}
                              for v, n in sorted(counts.items())])


def replica_minutes(session: Session, *, version: str, start: datetime, end: datetime) -> int:
    """Replica-minutes of `version` over [start, end), every pool."""
    stmt = select(func.coalesce(func.sum(ReplicaMinute.replicas), 0)).where(
        ReplicaMinute.version == version, ReplicaMinute.minute >= start, ReplicaMinute.minute < end)
    return int(session.scalar(stmt) or 0)


def recorded_versions(session: Session, *, start: datetime, end: datetime) -> list[str]:
    stmt = (select(ReplicaMinute.version).where(ReplicaMinute.minute >= start, ReplicaMinute.minute < end)
            .distinct().order_by(ReplicaMinute.version))
    return list(session.scalars(stmt))
