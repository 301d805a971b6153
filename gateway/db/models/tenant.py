"""A tenant: who pays, with its limits and semantic-cache settings."""
from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, Boolean, Float, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime, utcnow

TENANT_STATUSES = ("active", "disabled")
OUTPUT_CAP_MODES = ("reject", "clamp")


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=lambda: str(uuid.uuid4()))
    name: Mapped[str] = mapped_column(String(200), unique=True)
    status: Mapped[str] = mapped_column(String(16), default="active")
    # None = unlimited.
    rpm: Mapped[int | None] = mapped_column(Integer)
    tpm: Mapped[int | None] = mapped_column(Integer)
    monthly_token_budget: Mapped[int | None] = mapped_column(BigInteger)
    cache_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # Sampled outputs (temperature > 0) are only cached when the tenant opts in.
    cache_allow_sampling: Mapped[bool] = mapped_column(Boolean, default=False)
    # None = the cache's defaults.
    cache_threshold: Mapped[float | None] = mapped_column(Float)
    cache_ttl_s: Mapped[int | None] = mapped_column(Integer)
    cache_max_entries: Mapped[int | None] = mapped_column(Integer)
    # Scheduling plan, passed to the engines with every request: lower priority numbers run earlier (a request
    # may ask for a higher number, never a lower one), and share_weight is the tenant's fair share of a busy
    # replica relative to others (2.0: twice a tenant of 1.0).
    priority: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    share_weight: Mapped[float] = mapped_column(Float, default=1.0, server_default="1")
    # The tenant's commercial plan ("free", "pro"...): routing rules may send plans to different versions.
    plan: Mapped[str | None] = mapped_column(String(64))
    # Bytes of unexpired Batch API files the tenant may hold; None: the gateway's files_max_bytes_per_tenant.
    files_max_bytes: Mapped[int | None] = mapped_column(BigInteger)
    # Output caps (a key may carry stricter ones): the most tokens a request may ask for, and what one that names
    # no max_tokens gets; None = no cap / the gateway's default. `reject` answers a request over the cap with a
    # 400 naming it; `clamp` runs it with the cap and says so in a response header.
    max_output_tokens: Mapped[int | None] = mapped_column(Integer)
    default_max_tokens: Mapped[int | None] = mapped_column(Integer)
    output_cap_mode: Mapped[str] = mapped_column(String(8), default="reject", server_default="reject")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
