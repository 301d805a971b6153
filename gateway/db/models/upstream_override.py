"""An operator's live change to a catalogue upstream (PUT /admin/upstreams/{name}); it wins over the catalogue."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime, utcnow


class UpstreamOverride(Base):
    __tablename__ = "upstream_overrides"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    base_url: Mapped[str | None] = mapped_column(String(2000))
    api_key_encrypted: Mapped[str | None] = mapped_column(Text)  # Fernet token (gateway.security.secret_box)
    timeout_s: Mapped[float | None] = mapped_column(Float)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_by: Mapped[str] = mapped_column(String(200))
