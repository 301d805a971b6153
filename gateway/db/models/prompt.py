"""Prompts and their versions. A version is written once and never changed: serving it from any cache is
always right; only labels (prompt_label.py) move."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base
from gateway.db.types import UTCDateTime, utcnow


class Prompt(Base):
    __tablename__ = "prompts"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    # The owner: only its keys can serve the prompt. None: shared by every tenant.
    tenant_id: Mapped[str | None] = mapped_column(String(36), ForeignKey("tenants.id"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class PromptVersionRow(Base):
    __tablename__ = "prompt_versions"

    name: Mapped[str] = mapped_column(String(100), ForeignKey("prompts.name"), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    messages: Mapped[list[dict[str, Any]]] = mapped_column(JSON)  # [{"role", "content"}]
    model: Mapped[str | None] = mapped_column(String(200))
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
