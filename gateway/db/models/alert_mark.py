"""That an alert fired for one crossing: the unique key makes "once" hold across racing gateways (the insert
that wins emits the event; the others insert nothing)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime, utcnow


class AlertMark(Base):
    __tablename__ = "alert_marks"

    kind: Mapped[str] = mapped_column(String(64), primary_key=True)  # "budget.crossed"
    subject: Mapped[str] = mapped_column(String(200), primary_key=True)  # "<tenant id>"
    period: Mapped[str] = mapped_column(String(64), primary_key=True)  # "2026-12:80"
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
