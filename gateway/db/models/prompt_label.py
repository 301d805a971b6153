"""Prompt labels (`production`, `staging`, ...): where each points now, and every move it made."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime, utcnow


class PromptLabel(Base):
    """Read on every request that names the label (one primary-key lookup), so a move is served by every
    replica from its next request on."""
    __tablename__ = "prompt_labels"

    name: Mapped[str] = mapped_column(String(100), ForeignKey("prompts.name"), primary_key=True)
    label: Mapped[str] = mapped_column(String(100), primary_key=True)
    weights: Mapped[dict[str, int]] = mapped_column(JSON)  # {"1": 50, "2": 50}; JSON keys are strings
    previous: Mapped[dict[str, int] | None] = mapped_column(JSON)  # what a rollback returns to
    revision: Mapped[int] = mapped_column(Integer, default=1)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class PromptLabelMove(Base):
    """Append-only history of a label: each set or rollback, with the target it left."""
    __tablename__ = "prompt_label_moves"
    __table_args__ = (Index("ix_prompt_label_moves_name_label", "name", "label"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100))
    label: Mapped[str] = mapped_column(String(100))
    action: Mapped[str] = mapped_column(String(16))  # "set" | "rollback"
    weights: Mapped[dict[str, int]] = mapped_column(JSON)
    previous: Mapped[dict[str, int] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
