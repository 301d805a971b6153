"""Reservations: a tenant's reserved throughput per model, active until ended."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import hashlib

from sqlalchemy import false, func, or_, select, update
from sqlalchemy.orm import Session

from gateway.crud.commit import AuditHook, commit
from gateway.db.models.reservation import Reservation
from gateway.db.types import utcnow


def hold_model(session: Session, *, model: str) -> None:
    """Hold off every other reservation write on `model` until this transaction ends, so that two requests racing
    for the last capacity cannot both pass the check. PostgreSQL: the model's advisory lock. SQLite: its one write
    lock, taken by a write that changes nothing."""
    if session.get_bind().dialect.name == "postgresql":
        key = int.from_bytes(hashlib.sha256(f"reservations:{model}".encode()).digest()[:8], "big", signed=True)
        session.execute(select(func.pg_advisory_xact_lock(key)))
    else:
        session.execute(update(Reservation).where(false()).values(model=Reservation.model))


def create_reservation(session: Session, *, tenant_id: str, model: str, output_tokens_per_s: float,
                       monthly_fee: Decimal, audit: AuditHook | None = None) -> Reservation:
    reservation = Reservation(tenant_id=tenant_id, model=model, output_tokens_per_s=output_tokens_per_s,
                              monthly_fee=monthly_fee, created_at=utcnow())
    session.add(reservation)
    commit(session, reservation, audit)
    return reservation


def list_reservations(session: Session, *, tenant_id: str) -> list[Reservation]:
    """The tenant's reservations, active and ended, oldest first."""
    return list(session.scalars(select(Reservation).where(Reservation.tenant_id == tenant_id)
                                .order_by(Reservation.created_at, Reservation.id)))


def get_reservation(session: Session, *, tenant_id: str, reservation_id: str) -> Reservation | None:
    found = session.get(Reservation, reservation_id)
    return found if found is not None and found.tenant_id == tenant_id else None


def end_reservation(session: Session, *, reservation: Reservation, audit: AuditHook | None = None) -> Reservation:
    if reservation.ended_at is None:
        reservation.ended_at = utcnow()
        commit(session, reservation, audit)
    return reservation


def active_rates(session: Session, *, tenant_id: str) -> dict[str, float]:
    """model -> the output tokens/s the tenant's active reservations on it add up to."""
    rows = session.execute(select(Reservation.model, func.sum(Reservation.output_tokens_per_s))
                           .where(Reservation.tenant_id == tenant_id, Reservation.ended_at.is_(None))
                           .group_by(Reservation.model))
    return {model: float(rate) for model, rate in rows}


def reserved_on(session: Session, *, model: str) -> float:
    """Output tokens/s every tenant's active reservations on `model` add up to."""
    total = session.scalar(select(func.sum(Reservation.output_tokens_per_s))
                           .where(Reservation.model == model, Reservation.ended_at.is_(None)))
    return float(total or 0.0)


def reservations_in(session: Session, *, start: datetime, end: datetime,
                    tenant_id: str | None = None) -> list[Reservation]:
    """Reservations active at some moment of [start, end), oldest first."""
    stmt = select(Reservation).where(Reservation.created_at < end,
                                     or_(Reservation.ended_at.is_(None), Reservation.ended_at > start))
    if tenant_id is not None:
        stmt = stmt.where(Reservation.tenant_id == tenant_id)
    return list(session.scalars(stmt.order_by(Reservation.tenant_id, Reservation.created_at, Reservation.id)))
