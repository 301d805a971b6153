"""Database leases: how one gateway replica takes a row (a batch, a webhook delivery) for a while so no other
works on it meanwhile, on any table with `id`, `lease_owner` and `lease_until` columns.

A claim is a conditional UPDATE per candidate row: of two replicas racing for a row, exactly one update matches.
A lease that is not renewed lapses at `lease_until`, and any replica may then take the row over. Every function
runs in the caller's transaction (a Session or a Connection) and commits nothing."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, or_, select, update
from sqlalchemy.orm import Session

Executor = Session | Connection


def free(model: Any, now: datetime) -> ColumnElement[bool]:
    """No live lease holds the row."""
    return or_(model.lease_owner.is_(None), model.lease_until < now)


def held(model: Any, row_id: str, owner: str) -> ColumnElement[bool]:
    """The row is `owner`'s (lapsed or not: the holder still counts until another takes it)."""
    return and_(model.id == row_id, model.lease_owner == owner)


def leased_to(owner: str, now: datetime, lease_s: float) -> dict[str, Any]:
    """The column values of a lease held by `owner` from `now` for `lease_s`."""
    return {"lease_owner": owner, "lease_until": now + timedelta(seconds=lease_s)}


RELEASED: dict[str, Any] = {"lease_owner": None, "lease_until": None}


def claim(db: Executor, model: Any, *, where: Sequence[ColumnElement[bool]], order_by: Sequence[Any],
          owner: str, now: datetime, lease_s: float, limit: int, skip: Iterable[str] = ()) -> list[str]:
    """Up to `limit` ids of rows matching `where` that no live lease holds, now leased to `owner`, in
    `order_by` order. `skip`: ids the caller already holds."""
    eligible = (*where, free(model, now))
    skip = list(skip)
    if skip:
        eligible = (*eligible, model.id.not_in(skip))
    candidates = list(db.scalars(select(model.id).where(*eligible).order_by(*order_by).limit(limit)))
    won = []
    for row_id in candidates:
        done = db.execute(update(model).where(model.id == row_id, *eligible).values(**leased_to(owner, now, lease_s)))
        if done.rowcount:  # type: ignore[attr-defined]  # a CursorResult for an UPDATE
            won.append(row_id)
    return won


def renew(db: Executor, model: Any, *, row_id: str, owner: str, until: datetime) -> bool:
    """Extend `owner`'s lease; False when it no longer holds the row."""
    done = db.execute(update(model).where(held(model, row_id, owner)).values(lease_until=until))
    return bool(done.rowcount)  # type: ignore[attr-defined]


def release(db: Executor, model: Any, *, row_id: str, owner: str, **values: Any) -> bool:
    """Give the row up, writing `values` with it; False when `owner` no longer held it (nothing written)."""
    done = db.execute(update(model).where(held(model, row_id, owner)).values(**RELEASED, **values))
    return bool(done.rowcount)  # type: ignore[attr-defined]
