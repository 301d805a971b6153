"""Appending to the chain, inside the caller's transaction."""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from gateway.audit.chain import jsonable, seal
from gateway.audit.errors import ChainHeadMissing
from gateway.audit.record import AuditRecord, Change
from gateway.audit.table import HEAD_ID, AuditChainHead, AuditLogRow
from gateway.db.rowcount import rowcount
from gateway.db.types import utcnow

_head = AuditChainHead.__table__


def append(session: Session, change: Change, *, clock: Callable[[], datetime] = utcnow) -> AuditRecord:
    """Add `change` as the next row of the chain in `session`'s transaction; the caller's commit makes the
    row and the change it records durable together (a rollback drops both).

    Appends serialise on the head row: its UPDATE comes first and holds that row's lock until the
    transaction ends (PostgreSQL: a row lock, so a second writer, in this process or another gateway,
    waits and then reads the new head under READ COMMITTED; SQLite: the database's write lock). So no two
    rows ever share a prev_hash, and seq has no gaps."""
    bumped = session.execute(update(_head).where(_head.c.id == HEAD_ID).values(seq=_head.c.seq + 1))
    if rowcount(bumped) != 1:
        raise ChainHeadMissing("audit_chain_head has no row; was `tollgate migrate` run?")
    seq, prev_hash = session.execute(select(_head.c.seq, _head.c.hash).where(_head.c.id == HEAD_ID)).one()
    record = seal(seq=seq, at=clock(), actor=change.actor, action=change.action,
                  target_type=change.target.type, target_id=change.target.id, request_id=change.request_id,
                  before=jsonable(change.before), after=jsonable(change.after), prev_hash=prev_hash)
    session.add(AuditLogRow(seq=record.seq, at=record.at, actor=record.actor, action=record.action,
                            target_type=record.target_type, target_id=record.target_id,
                            request_id=record.request_id, before=record.before, after=record.after,
                            prev_hash=record.prev_hash, hash=record.hash))
    session.execute(update(_head).where(_head.c.id == HEAD_ID).values(hash=record.hash))
    return record

