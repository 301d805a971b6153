"""The prompt prefixes a tenant sent in a month, hashed by the gateway (gateway/billing/prefix_recorder.py): how
often each came, and how often it was the longest part of a request's input already seen that month."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime

PREVIEW_CHARS = 80


class PromptPrefix(Base):
    __tablename__ = "prompt_prefixes"
    # The key's first two columns are what the report and the cap scan by.
    __table_args__ = (UniqueConstraint("tenant_id", "month", "digest"),)

    # SQLite only autoincrements an INTEGER PRIMARY KEY.
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
                                    autoincrement=True)
    tenant_id: Mapped[str] = mapped_column(String(36), ForeignKey("tenants.id"))
    month: Mapped[str] = mapped_column(String(7))  # "2026-11", UTC
    kind: Mapped[str] = mapped_column(String(8))  # "system" (the system prompt) | "prompt" (the whole prompt)
    digest: Mapped[str] = mapped_column(String(64))  # sha256 hex of the kind and the text (gateway.billing.prefixes)
    tokens: Mapped[int] = mapped_column(Integer)
    times_seen: Mapped[int] = mapped_column(Integer)
    # Requests whose longest prefix already seen that month was this one: its tokens repeated that many times.
    times_reused: Mapped[int] = mapped_column(Integer)
    first_seen: Mapped[datetime] = mapped_column(UTCDateTime)
    last_seen: Mapped[datetime] = mapped_column(UTCDateTime)
    # The start of the text: the tenant's own data, shown only on its waste report (admin only).
    preview: Mapped[str] = mapped_column(String(PREVIEW_CHARS))
