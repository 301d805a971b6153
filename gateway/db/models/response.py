"""A stored Responses API answer, kept per tenant so `previous_response_id` and GET /v1/responses/{id} can use it."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime, utcnow


class StoredResponse(Base):
    __tablename__ = "stored_responses"
    __table_args__ = (Index("ix_stored_responses_tenant_created", "tenant_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # "resp_<hex>"
    tenant_id: Mapped[str] = mapped_column(String(36), ForeignKey("tenants.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # UTF-8 JSON, as bytes (like the semantic cache's payloads): client text (NUL bytes included) round-trips
    # on SQLite and PostgreSQL alike, and nothing needs to query inside it.
    response: Mapped[bytes] = mapped_column(LargeBinary)  # the Response object, as the client received it
    context: Mapped[bytes] = mapped_column(LargeBinary)  # [{"role", "content"}]: the conversation before the output
