"""A webhook: where alerts go, which events it wants, and the secret its deliveries are signed with."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime, utcnow


class Webhook(Base):
    __tablename__ = "webhooks"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)  # "wh_<hex>"
    url: Mapped[str] = mapped_column(String(2000))
    events: Mapped[list] = mapped_column(JSON)  # event types, or ["*"]
    # Sealed with the gateway's SecretBox (an HMAC needs the secret itself, so it is encrypted, not hashed).
    # secret_sealed False: a plaintext row from before 0017, sealed by the gateway at its next start.
    secret: Mapped[str] = mapped_column(Text)
    secret_sealed: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    secret_hint: Mapped[str] = mapped_column(String(16), default="", server_default="")  # "…" + its last 4
    thresholds: Mapped[dict] = mapped_column(JSON, default=dict)  # {"error_rate": 0.05, "ttft_p99_ms": 2000}
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
