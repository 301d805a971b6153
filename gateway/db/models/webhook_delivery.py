"""The alerts outbox: one row per (event, webhook), written with the fact that caused the event, leased to the
one gateway sending it, retried until delivered or out of attempts."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime, utcnow

DELIVERY_STATUSES = ("pending", "delivered", "failed")


class WebhookDelivery(Base):
    __tablename__ = "webhook_deliveries"
    __table_args__ = (Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
                      Index("ix_webhook_deliveries_webhook_created", "webhook_id", "created_at"))

    id: Mapped[str] = mapped_column(String(40), primary_key=True)  # "evt_<hex>": the id receivers dedupe on
    webhook_id: Mapped[str] = mapped_column(String(40), ForeignKey("webhooks.id", ondelete="CASCADE"))
    event_type: Mapped[str] = mapped_column(String(64))
    body: Mapped[str] = mapped_column(Text)  # the JSON sent, fixed at creation so every retry sends the same bytes
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)  # None once delivered or failed
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Which gateway is sending it and until when: another one claims it only after.
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
