"""A model's price per million tokens from `effective_from` until the next row's."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import JSON, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import Money, UTCDateTime, utcnow


class Price(Base):
    __tablename__ = "prices"
    __table_args__ = (UniqueConstraint("model", "effective_from", name="uq_prices_model_effective_from"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    model: Mapped[str] = mapped_column(String(200), index=True)
    input_per_million: Mapped[Decimal] = mapped_column(Money)
    output_per_million: Mapped[Decimal] = mapped_column(Money)
    cached_input_per_million: Mapped[Decimal] = mapped_column(Money, default=Decimal(0))
    cached_output_per_million: Mapped[Decimal] = mapped_column(Money, default=Decimal(0))
    # Monthly volume tiers, [{"up_to": 100000000, "input_per_million": "0.2", "output_per_million": "0.8"}, ...,
    # {"up_to": null, ...}] (decimal strings), ascending; None = flat (one tier at the fields above). The first
    # tier's prices are always the flat fields'. Applied when the bill is built (gateway.domain.tiers).
    tiers: Mapped[list[dict] | None] = mapped_column(JSON)
    effective_from: Mapped[datetime] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
