"""How many replicas of a version a pool held during one minute (gateway/economics/recorder.py)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime


class ReplicaMinute(Base):
    __tablename__ = "replica_minutes"

    # The key, not a sum: every gateway watching the same pool writes the same row for the same minute.
    version: Mapped[str] = mapped_column(String(200), primary_key=True)
    pool: Mapped[str] = mapped_column(String(200), primary_key=True)  # "ray:<namespace>", "inprocess:<host>:<pid>"
    minute: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True, index=True)  # UTC, seconds zero
    replicas: Mapped[int] = mapped_column(Integer)  # the most seen up at once in that minute
