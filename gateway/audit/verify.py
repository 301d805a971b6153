"""Checking the chain: every row's hash, every link, no gaps, and the last row against the head row."""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.audit.chain import GENESIS, recomputed_hash
from gateway.audit.query import to_record
from gateway.audit.table import HEAD_ID, AuditChainHead, AuditLogRow


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    rows: int  # rows checked before the verdict
    head_seq: int | None  # what audit_chain_head says (None: no head row)
    head_hash: str | None
    bad_seq: int | None = None  # the first row found broken (or missing)
    reason: str | None = None

    def summary(self) -> str:
        if self.ok:
            return f"audit log intact: {self.rows} rows, head seq {self.head_seq} hash {self.head_hash}"
        where = f"seq {self.bad_seq}" if self.bad_seq is not None else "chain head"
        return f"audit log BROKEN at {where}: {self.reason}"


def verify(session: Session, *, chunk: int = 1000) -> Verdict:
    """Walk the rows in seq order; the first edited row (its hash no longer matches its fields), missing
    row (a gap in seq, or a prev_hash that is not the row before's hash) or cut-off tail (the head row
    names a later seq or another hash) fails the walk. Read-only.

    Someone able to rewrite every row after an edit and the head row too is not caught here: keep the
    head hash printed on success somewhere else (a ticket, a log shipper) to anchor it."""
    head = session.execute(select(AuditChainHead.seq, AuditChainHead.hash)
                           .where(AuditChainHead.id == HEAD_ID)).one_or_none()
    head_seq, head_hash = (head[0], head[1]) if head is not None else (None, None)

    def broken(rows: int, seq: int | None, reason: str) -> Verdict:
        return Verdict(False, rows, head_seq, head_hash, seq, reason)

    expected_seq, prev_hash, rows = 1, GENESIS, 0
    stmt = select(AuditLogRow).order_by(AuditLogRow.seq).execution_options(yield_per=chunk)
    for row in session.scalars(stmt):
        record = to_record(row)
        if record.seq != expected_seq:
            return broken(rows, expected_seq, f"row {expected_seq} is missing (the next row is {record.seq})")
        if recomputed_hash(record) != record.hash:
            return broken(rows, record.seq, "its hash does not match its contents (the row was edited)")
        if record.prev_hash != prev_hash:
            return broken(rows, record.seq, "its prev_hash is not the hash of the row before it "
                                            "(the row before was edited and re-hashed, or replaced)")
        expected_seq, prev_hash, rows = expected_seq + 1, record.hash, rows + 1
    if head is None:
        return broken(rows, None, "audit_chain_head has no row (deleted, or the database was not migrated)")
    if head_seq > rows:
        return broken(rows, rows + 1, f"the chain head says the last row is {head_seq} but the table ends at "
                                      f"{rows} (rows were removed from the end)")
    if head_seq < rows:
        return broken(rows, head_seq + 1, f"rows after the chain head's last seq {head_seq} "
                                          "(added behind the writer's back)")
    if head_hash != prev_hash:
        return broken(rows, rows or None, "the chain head's hash is not the last row's hash")
    return Verdict(True, rows, head_seq, head_hash)
