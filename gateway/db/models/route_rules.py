"""An alias' routing rules (gateway.routing.rules): which requests go to a cheaper or a stronger version."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime, utcnow


class RouteRules(Base):
    """The ordered rules of one alias in their JSON form (gateway.routing.rule_spec); first match wins."""

    __tablename__ = "route_rules"

    alias: Mapped[str] = mapped_column(String(200), primary_key=True)
    rules: Mapped[list] = mapped_column(JSON)  # [{"name", "when", "target"}]
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_by: Mapped[str] = mapped_column(String(200))
