"""A tenant's file for the Batch API: an uploaded JSONL input, or a batch's output or error file."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime, utcnow


class BatchFile(Base):
    __tablename__ = "batch_files"
    __table_args__ = (Index("ix_batch_files_tenant_created", "tenant_id", "created_at"),
                      Index("ix_batch_files_expires_at", "expires_at"))

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "file-<hex>"
    tenant_id: Mapped[str] = mapped_column(String(36), ForeignKey("tenants.id", ondelete="CASCADE"))
    filename: Mapped[str] = mapped_column(String(256))
    purpose: Mapped[str] = mapped_column(String(32))  # "batch" | "batch_output"
    bytes: Mapped[int] = mapped_column(Integer)
    # In the database, not on a local disk: every gateway replica serves and runs the same files.
    content: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # None: kept until deleted. Past it the file is gone for the tenant at once; the sweep deletes the row later.
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
