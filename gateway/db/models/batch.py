"""A batch (its state and counts, leased to the one gateway replica running it) and its finished lines."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime, utcnow


class Batch(Base):
    __tablename__ = "batches"
    __table_args__ = (Index("ix_batches_tenant_created", "tenant_id", "created_at"),
                      Index("ix_batches_status", "status"))

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "batch_<hex>"
    tenant_id: Mapped[str] = mapped_column(String(36), ForeignKey("tenants.id", ondelete="CASCADE"))
    key_id: Mapped[str] = mapped_column(String(36))  # the key that created it: its lines run as that key
    endpoint: Mapped[str] = mapped_column(String(64))
    input_file_id: Mapped[str] = mapped_column(String(64))
    completion_window: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))
    errors: Mapped[bytes | None] = mapped_column(LargeBinary)  # JSON list of {code, message, param, line}
    metadata_json: Mapped[bytes | None] = mapped_column(LargeBinary)  # JSON object, as the client sent it
    output_file_id: Mapped[str | None] = mapped_column(String(64))
    error_file_id: Mapped[str | None] = mapped_column(String(64))
    total: Mapped[int] = mapped_column(Integer, default=0)
    completed: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    # Tokens the ledger billed for the recorded lines (OpenAI's `usage`): added in the transaction that records
    # a line, so a line counts once however often it runs, and reading them costs nothing however long the batch.
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    cached_tokens: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    in_progress_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finalizing_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    failed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    expired_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    cancelling_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    cancelled_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Which runner holds it and until when (renewed while it runs): a second replica claims it only after.
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)


class BatchLine(Base):
    """One input line that is done, with its output line: written once, so a resumed batch skips it."""

    __tablename__ = "batch_lines"

    batch_id: Mapped[str] = mapped_column(String(64), ForeignKey("batches.id", ondelete="CASCADE"),
                                          primary_key=True)
    line: Mapped[int] = mapped_column(Integer, primary_key=True)  # 0-based index in the input file
    ok: Mapped[bool] = mapped_column(Boolean)  # True: the output file; False: the error file
    output: Mapped[bytes] = mapped_column(LargeBinary)  # the JSONL line (no newline), as the client reads it
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
