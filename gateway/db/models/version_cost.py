"""What one replica-hour of a model version costs from `effective_from` until the next row's."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import Money, UTCDateTime, utcnow


class VersionCost(Base):
    __tablename__ = "version_costs"
    __table_args__ = (UniqueConstraint("version", "effective_from", name="uq_version_costs_version_effective_from"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    version: Mapped[str] = mapped_column(String(200), index=True)  # "smollm2-135m-instruct@fp32"
    per_replica_hour: Mapped[Decimal] = mapped_column(Money)
    hardware: Mapped[str] = mapped_column(String(200), default="")  # "2 vCPU", "1×H100": for people, not sums
    effective_from: Mapped[datetime] = mapped_column(UTCDateTime)
    set_by: Mapped[str] = mapped_column(String(64))  # "catalogue", or the admin credential ("admin:<fingerprint>")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
