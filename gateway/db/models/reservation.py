"""A tenant's reserved throughput on a model: output tokens/s the engine guarantees it, for a monthly fee."""
from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal

from sqlalchemy import Float, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import Money, UTCDateTime, utcnow


class Reservation(Base):
    __tablename__ = "reservations"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=lambda: str(uuid.uuid4()))
    tenant_id: Mapped[str] = mapped_column(String(36), ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    model: Mapped[str] = mapped_column(String(200))  # a priced model of the catalogue
    output_tokens_per_s: Mapped[float] = mapped_column(Float)
    monthly_fee: Mapped[Decimal] = mapped_column(Money)  # in the gateway's currency, prorated by the second
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)  # None: active
