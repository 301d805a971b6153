"""WHAT a limit is: plain values, no counting and no storage."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, UTC


@dataclass(frozen=True, slots=True)
class RateLimit:
    """`amount` units (requests or tokens) per `window_s` seconds for one scope (tenant or key)."""

    amount: int
    window_s: float
    unit: str  # "requests" | "tokens"
    scope: str  # "tenant:<id>" | "key:<id>"

    def __post_init__(self) -> None:
        if self.amount < 1:
            raise ValueError(f"amount must be >= 1, got {self.amount}")
        if self.window_s <= 0:
            raise ValueError(f"window_s must be > 0, got {self.window_s}")
        if self.unit not in ("requests", "tokens"):
            raise ValueError(f"unit must be 'requests' or 'tokens', got {self.unit!r}")

    @property
    def name(self) -> str:
        return f"{self.scope}:{self.unit}:{int(self.window_s)}s"


@dataclass(frozen=True, slots=True)
class Budget:
    """A tenant's tokens per calendar month (UTC)."""

    tokens: int
    tenant_id: str

    def __post_init__(self) -> None:
        if self.tokens < 0:
            raise ValueError(f"tokens must be >= 0, got {self.tokens}")

    @staticmethod
    def month_of(now: float) -> str:
        return datetime.fromtimestamp(now, tz=UTC).strftime("%Y-%m")

    @staticmethod
    def month_start(now: float) -> datetime:
        d = datetime.fromtimestamp(now, tz=UTC)
        return d.replace(day=1, hour=0, minute=0, second=0, microsecond=0)

    def key(self, now: float) -> str:
        return f"tollgate:budget:{self.tenant_id}:{self.month_of(now)}"
