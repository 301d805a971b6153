"""The usage ledger: append-only, one row per request, idempotent by request_id."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import BigInteger, Boolean, Float, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import Money, UTCDateTime, utcnow


class Usage(Base):
    __tablename__ = "usage_ledger"
    __table_args__ = (Index("ix_usage_ledger_tenant_created", "tenant_id", "created_at"),)

    # SQLite only autoincrements an INTEGER PRIMARY KEY.
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
                                    autoincrement=True)
    request_id: Mapped[str] = mapped_column(String(64), unique=True)
    tenant_id: Mapped[str] = mapped_column(String(36), ForeignKey("tenants.id"))
    key_id: Mapped[str | None] = mapped_column(String(36))
    endpoint: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(200))  # the priced, public model
    version: Mapped[str | None] = mapped_column(String(200))
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cached_tokens: Mapped[int] = mapped_column(Integer, default=0)
    # Of completion_tokens, those the tenant's reserved throughput covered (the engine's count): paid by the
    # reservation's fee, so not in `cost`.
    reserved_tokens: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    cache_hit: Mapped[bool] = mapped_column(Boolean, default=False)
    cost: Mapped[Decimal | None] = mapped_column(Money)  # None only if the model had no price
    currency: Mapped[str] = mapped_column(String(8))
    latency_ms: Mapped[float | None] = mapped_column(Float)
    ttft_ms: Mapped[float | None] = mapped_column(Float)
    engine_ms: Mapped[float | None] = mapped_column(Float)  # None: not metered (embeddings, older rows)
    status: Mapped[str] = mapped_column(String(16))
    kind: Mapped[str] = mapped_column(String(16), default="interactive", server_default="interactive")  # | "batch"
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    prompt_version: Mapped[str | None] = mapped_column(String(120))  # "greeting:2" when a stored prompt served
    # Upstream versions: "upstream" (billed on its reported usage) | "gateway" (it reported none: counted here)
    metered_by: Mapped[str | None] = mapped_column(String(16))
    # Set only when the tenant's output cap clamped the request: the max_tokens it asked for, and the cap it ran at.
    max_tokens_asked: Mapped[int | None] = mapped_column(Integer)
    max_tokens_cap: Mapped[int | None] = mapped_column(Integer)
