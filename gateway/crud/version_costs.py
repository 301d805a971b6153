"""Replica-hour prices: a history per version; the one in effect at T has the latest effective_from <= T."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.crud.commit import AuditHook, commit
from gateway.db.models.version_cost import VersionCost


def list_version_costs(session: Session) -> list[VersionCost]:
    return list(session.scalars(select(VersionCost).order_by(VersionCost.version, VersionCost.effective_from)))


def set_version_cost(session: Session, *, version: str, per_replica_hour: Decimal, hardware: str,
                     effective_from: datetime, set_by: str, audit: AuditHook | None = None) -> VersionCost:
    """Add a price from `effective_from`; the same (version, effective_from) is overwritten. `audit` records it
    in the same transaction."""
    row = session.scalar(select(VersionCost).where(VersionCost.version == version,
                                                   VersionCost.effective_from == effective_from))
    if row is None:
        row = VersionCost(version=version, effective_from=effective_from)
        session.add(row)
    row.per_replica_hour, row.hardware, row.set_by = per_replica_hour, hardware, set_by
    commit(session, row, audit)
    return row


def cost_in_effect(session: Session, *, version: str, at: datetime) -> VersionCost | None:
    """The version's row with the latest effective_from <= `at`."""
    return session.scalar(select(VersionCost).where(VersionCost.version == version, VersionCost.effective_from <= at)
                          .order_by(VersionCost.effective_from.desc()).limit(1))


def costed_versions(session: Session) -> set[str]:
    return set(session.scalars(select(VersionCost.version).distinct()))
