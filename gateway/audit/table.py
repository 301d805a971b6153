"""The audit tables: `audit_log` (append-only rows) and `audit_chain_head` (one row: the last seq and hash).

The head row is what appends lock to serialise (gateway.audit.writer) and what `verify` compares the last
row with, so a cut-off tail is noticed. Migration 0008 creates both with their append-only triggers; the
listeners below do the same for `Base.metadata.create_all` (tests), with the same DDL."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, BigInteger, DDL, Integer, String, event, insert
from sqlalchemy.orm import Mapped, mapped_column

from gateway.audit.chain import GENESIS
from gateway.db.base import Base
from gateway.db.types import UTCDateTime

HEAD_ID = 1
APPEND_ONLY_MESSAGE = "audit_log is append-only"


class AuditLogRow(Base):
    __tablename__ = "audit_log"

    # SQLite only autoincrements an INTEGER PRIMARY KEY.
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
                                    autoincrement=True)
    seq: Mapped[int] = mapped_column(BigInteger, unique=True)  # 1, 2, 3... with no gaps
    at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    actor: Mapped[str] = mapped_column(String(200), index=True)
    action: Mapped[str] = mapped_column(String(64), index=True)
    target_type: Mapped[str] = mapped_column(String(32))
    target_id: Mapped[str] = mapped_column(String(200))
    request_id: Mapped[str | None] = mapped_column(String(64))
    before: Mapped[object | None] = mapped_column(JSON(none_as_null=True))
    after: Mapped[object | None] = mapped_column(JSON(none_as_null=True))
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))


class AuditChainHead(Base):
    __tablename__ = "audit_chain_head"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)  # always HEAD_ID
    seq: Mapped[int] = mapped_column(BigInteger)  # 0 before the first row
    hash: Mapped[str] = mapped_column(String(64))  # GENESIS before the first row


# The same statements as migrations/versions/0008_audit_log.py.
SQLITE_TRIGGERS = [
    f"CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log "
    f"BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY_MESSAGE}'); END",
    f"CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log "
    f"BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY_MESSAGE}'); END",
]
POSTGRESQL_TRIGGERS = [
    "CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN RAISE EXCEPTION '{APPEND_ONLY_MESSAGE}'; END $$",
    "CREATE TRIGGER audit_log_no_change BEFORE UPDATE OR DELETE ON audit_log "
    "FOR EACH ROW EXECUTE FUNCTION audit_log_append_only()",
    "CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log "
    "FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only()",
]

for _sql in SQLITE_TRIGGERS:
    event.listen(AuditLogRow.__table__, "after_create", DDL(_sql).execute_if(dialect="sqlite"))
for _sql in POSTGRESQL_TRIGGERS:
    event.listen(AuditLogRow.__table__, "after_create", DDL(_sql).execute_if(dialect="postgresql"))


@event.listens_for(AuditChainHead.__table__, "after_create")
def _genesis(target, connection, **_) -> None:
    connection.execute(insert(target).values(id=HEAD_ID, seq=0, hash=GENESIS))
