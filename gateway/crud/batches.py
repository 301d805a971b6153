"""Batches: the tenant's reads and cancel, and the runner's claims, leases, finished lines and finalizing.

Every write the runner makes is conditional on it still holding the batch's lease, so two gateway replicas
never run one batch at once; a finished line is one row (primary key: batch, line) and its counter in one
transaction, so a line is recorded once however often it is attempted."""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gateway.crud import leases
from gateway.domain import batch_state as state
from gateway.db.models.batch import Batch, BatchLine
from gateway.domain.batch_usage import LineUsage
from gateway.db.models.batch_file import BatchFile
from gateway.db.models.usage import Usage
from gateway.db.rowcount import rowcount


def create_batch(session: Session, *, batch: Batch) -> Batch:
    session.add(batch)
    session.commit()
    return batch


def get_batch(session: Session, *, tenant_id: str, batch_id: str) -> Batch | None:
    return session.scalar(select(Batch).where(Batch.id == batch_id, Batch.tenant_id == tenant_id))


def list_batches(session: Session, *, tenant_id: str, limit: int = 20, after: str | None = None) -> list[Batch]:
    """Newest first; `after` a batch id of the tenant's: those listed after it."""
    stmt = (select(Batch).where(Batch.tenant_id == tenant_id)
            .order_by(Batch.created_at.desc(), Batch.id.desc()).limit(limit))
    if after is not None:
        cursor = get_batch(session, tenant_id=tenant_id, batch_id=after)
        if cursor is not None:
            stmt = stmt.where(or_(Batch.created_at < cursor.created_at,
                                  and_(Batch.created_at == cursor.created_at, Batch.id < cursor.id)))
    return list(session.scalars(stmt))


def request_cancel(session: Session, *, tenant_id: str, batch_id: str, now: datetime) -> Batch | None:
    """Move a validating or running batch to cancelling (the runner finishes it); others are left as they
    are. None when the tenant has no such batch."""
    session.execute(update(Batch).where(Batch.id == batch_id, Batch.tenant_id == tenant_id,
                                        Batch.status.in_(state.CANCELLABLE))
                    .values(status=state.CANCELLING, cancelling_at=now))
    session.commit()
    return get_batch(session, tenant_id=tenant_id, batch_id=batch_id)


def status_of(session: Session, *, batch_id: str) -> str | None:
    return session.scalar(select(Batch.status).where(Batch.id == batch_id))


# --- the runner's side


def _held(batch_id: str, owner: str):
    return leases.held(Batch, batch_id, owner)


def claim(session: Session, *, owner: str, now: datetime, lease_s: float, limit: int,
          skip: Iterable[str] = ()) -> list[str]:
    """Up to `limit` runnable batches no live lease holds, now leased to `owner` (oldest first)."""
    claimed = leases.claim(session, Batch, where=[Batch.status.in_(state.RUNNABLE)],
                           order_by=[Batch.created_at, Batch.id], owner=owner, now=now, lease_s=lease_s,
                           limit=limit, skip=skip)
    session.commit()
    return claimed


def renew(session: Session, *, batch_id: str, owner: str, until: datetime) -> bool:
    """Extend the lease; False when `owner` no longer holds it."""
    renewed = leases.renew(session, Batch, row_id=batch_id, owner=owner, until=until)
    session.commit()
    return renewed


def release(session: Session, *, batch_id: str, owner: str) -> None:
    leases.release(session, Batch, row_id=batch_id, owner=owner)
    session.commit()


def held_batch(session: Session, *, batch_id: str, owner: str) -> Batch | None:
    return session.scalar(select(Batch).where(_held(batch_id, owner)))


def move(session: Session, *, batch_id: str, owner: str, to: str, now: datetime, **values) -> bool:
    """Move a held batch to `to` (stamping its time), if the move is allowed from where it is now."""
    allowed = [s for s in (*state.RUNNABLE,) if state.can_move(s, to)]
    stamp = {state.STAMP[to]: now} if to in state.STAMP else {}
    done = session.execute(update(Batch).where(_held(batch_id, owner), Batch.status.in_(allowed))
                           .values(status=to, **stamp, **values))
    session.commit()
    return bool(rowcount(done))


def done_lines(session: Session, *, batch_id: str) -> set[int]:
    return set(session.scalars(select(BatchLine.line).where(BatchLine.batch_id == batch_id)))


def record_line(session: Session, *, batch_id: str, line: int, ok: bool, output: bytes, now: datetime,
                request_id: str | None = None, answered: LineUsage | None = None) -> bool:
    """Keep a finished line, count it and add its tokens to the batch's usage, together; False when the line
    was recorded already (then nothing is added: a line counts once).

    The tokens are the ledger's row for `request_id` when it is there (an answer's row is durable before the
    answer returns): exact even when an earlier, cut-off attempt is what the ledger kept. Otherwise (a row
    still queued, e.g. the database was briefly away) the answer's own `usage`, which is what its row holds."""
    try:
        session.add(BatchLine(batch_id=batch_id, line=line, ok=ok, output=output, created_at=now))
        session.flush()
        tokens = _billed(session, request_id) or answered or LineUsage()
        counter = Batch.completed if ok else Batch.failed
        session.execute(update(Batch).where(Batch.id == batch_id).values({
            counter: counter + 1, Batch.input_tokens: Batch.input_tokens + tokens.input_tokens,
            Batch.cached_tokens: Batch.cached_tokens + tokens.cached_tokens,
            Batch.output_tokens: Batch.output_tokens + tokens.output_tokens}))
        session.commit()
    except IntegrityError:
        session.rollback()
        return False
    return True


def _billed(session: Session, request_id: str | None) -> LineUsage | None:
    if request_id is None:
        return None
    row = session.execute(select(Usage.prompt_tokens, Usage.cached_tokens, Usage.completion_tokens)
                          .where(Usage.request_id == request_id)).first()
    return None if row is None else LineUsage(input_tokens=row[0], cached_tokens=row[1], output_tokens=row[2])


def finalize(session: Session, *, batch: Batch, owner: str, to: str, now: datetime,
             output_file: BatchFile | None, error_file: BatchFile | None) -> bool:
    """The batch's output and error files and its final state, in one transaction: a runner that dies
    half-way leaves it finalizing, for the next one to do again."""
    if not state.can_move(batch.status, to) or batch.status != state.FINALIZING:
        raise ValueError(f"cannot finalize a {batch.status} batch as {to}")
    for f in (output_file, error_file):
        if f is not None:
            session.add(f)
    done = session.execute(update(Batch).where(_held(batch.id, owner), Batch.status == state.FINALIZING).values(
        status=to, **{state.STAMP[to]: now}, output_file_id=output_file.id if output_file else None,
        error_file_id=error_file.id if error_file else None, **leases.RELEASED))
    if not rowcount(done):
        session.rollback()
        return False
    session.commit()
    return True


def finished_lines(session: Session, *, batch_id: str) -> list[BatchLine]:
    return list(session.scalars(select(BatchLine).where(BatchLine.batch_id == batch_id).order_by(BatchLine.line)))


def line_counts(session: Session, *, batch_id: str) -> tuple[int, int]:
    """(ok, failed) lines recorded."""
    rows = dict(session.execute(select(BatchLine.ok, func.count()).where(BatchLine.batch_id == batch_id)
                                .group_by(BatchLine.ok)).all())
    return int(rows.get(True, 0)), int(rows.get(False, 0))


def output_bytes(session: Session, *, batch_id: str) -> int:
    """Bytes the batch's recorded lines hold: what its output and error files will."""
    return int(session.scalar(select(func.coalesce(func.sum(func.length(BatchLine.output)), 0))
                              .where(BatchLine.batch_id == batch_id)))


def note_errors(session: Session, *, batch_id: str, errors: bytes) -> None:
    """The batch's `errors` (JSON list), unless it has some already."""
    session.execute(update(Batch).where(Batch.id == batch_id, Batch.errors.is_(None)).values(errors=errors))
    session.commit()


def file_of_lines(session: Session, *, batch_id: str, ok: bool, chunk: int = 256) -> bytearray:
    """The output (ok) or error file's content: the lines' JSON, a newline after each, read from the database a
    few hundred rows at a time into one buffer (never a list of lines and a joined copy besides)."""
    out = bytearray()
    rows = session.execute(select(BatchLine.output).where(BatchLine.batch_id == batch_id, BatchLine.ok.is_(ok))
                           .order_by(BatchLine.line).execution_options(yield_per=chunk))
    for (line,) in rows:
        out += line
        out += b"\n"
    return out
