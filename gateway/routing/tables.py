"""Route tables: the operators' overrides of the catalogue's splits and their audit log."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime, utcnow


class RouteOverride(Base):
    """The live route of an alias, replacing the catalogue's default for it."""

    __tablename__ = "route_overrides"

    alias: Mapped[str] = mapped_column(String(200), primary_key=True)
    weights: Mapped[dict] = mapped_column(JSON)  # version -> percent
    fallbacks: Mapped[list] = mapped_column(JSON)
    stable: Mapped[str] = mapped_column(String(200))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_by: Mapped[str] = mapped_column(String(200))


class RouteAudit(Base):
    """Append-only: every route change, by an operator or by the automatic rollback."""

    __tablename__ = "route_audit"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    actor: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(32))
    alias: Mapped[str] = mapped_column(String(200), index=True)
    before: Mapped[dict | None] = mapped_column(JSON)
    after: Mapped[dict] = mapped_column(JSON)
    reason: Mapped[str | None] = mapped_column(Text)
