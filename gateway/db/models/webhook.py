"""A webhook: where alerts go, which events it wants, and the secret its deliveries are signed with."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime, utcnow


class Webhook(Base):
    __tablename__ = "webhooks"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)  # "wh_<hex>"
    url: Mapped[str] = mapped_column(String(2000))
    events: Mapped[list] = mapped_column(JSON)  # event types, or ["*"]
    # Kept as given: an HMAC needs the secret itself. Never returned by the API nor written to the audit log.
    secret: Mapped[str] = mapped_column(String(200))
    thresholds: Mapped[dict] = mapped_column(JSON, default=dict)  # {"error_rate": 0.05, "ttft_p99_ms": 2000}
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
