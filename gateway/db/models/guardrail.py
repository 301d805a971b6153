"""A tenant's guardrail rules: one row per tenant, the rules as the JSON list the admin API takes (re-validated
by gateway.guardrails.rules when read, so a row in force has always passed the same checks)."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime, utcnow


class TenantGuardrails(Base):
    __tablename__ = "tenant_guardrails"

    tenant_id: Mapped[str] = mapped_column(String(36), ForeignKey("tenants.id", ondelete="CASCADE"),
                                           primary_key=True)
    rules: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
