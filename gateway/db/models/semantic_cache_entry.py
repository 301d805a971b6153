"""The persisted cache entry table (one row per stored answer)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime


class SemanticCacheEntryRow(Base):
    __tablename__ = "semantic_cache_entries"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    # No foreign key to tenants: the cache outlives nothing it does not own, and a tenant's
    # entries go with DELETE /admin/tenants/{id}/cache.
    tenant_id: Mapped[str] = mapped_column(String(36), nullable=False)
    model: Mapped[str] = mapped_column(String(200), nullable=False)
    namespace: Mapped[str] = mapped_column(String(64), nullable=False)
    exact_key: Mapped[str] = mapped_column(String(64), nullable=False)
    # UTF-8 JSON {"question", "text", "prompt_tokens", "completion_tokens", "finish_reason", "max_tokens",
    # "token_ends"} (the last two: truncation.py).
    # Bytes, not TEXT, so one badly encoded row is caught by our decoder and skipped instead of
    # failing the driver's fetch of the whole table.
    payload: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    vector: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)  # float32 little-endian [dim]
    dim: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)

    __table_args__ = (Index("ix_semantic_cache_entries_tenant_id", "tenant_id"),)
