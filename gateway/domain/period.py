"""Billing periods: a calendar month in UTC, or any [start, end) range."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


@dataclass(frozen=True, slots=True)
class Period:
    start: datetime  # inclusive, UTC
    end: datetime  # exclusive, UTC

    def __post_init__(self) -> None:
        if self.start.tzinfo is None or self.end.tzinfo is None:
            raise ValueError("period bounds must be timezone-aware")
        if self.end <= self.start:
            raise ValueError("period end must be after its start")


@dataclass(frozen=True, slots=True)
class Month:
    year: int
    month: int

    def __post_init__(self) -> None:
        if not 1 <= self.month <= 12 or not 1 <= self.year <= 9998:
            raise ValueError(f"not a month: {self.year}-{self.month}")

    @classmethod
    def parse(cls, text: str) -> Month:
        """'YYYY-MM' -> Month; ValueError otherwise."""
        m = _MONTH.match(text)
        if m is None:
            raise ValueError(f"month must look like YYYY-MM, got {text!r}")
        return cls(int(m[1]), int(m[2]))

    @classmethod
    def containing(cls, when: datetime) -> Month:
        when = when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
        return cls(when.year, when.month)

    @property
    def start(self) -> datetime:
        return datetime(self.year, self.month, 1, tzinfo=UTC)

    @property
    def end(self) -> datetime:
        year, month = (self.year + 1, 1) if self.month == 12 else (self.year, self.month + 1)
        return datetime(year, month, 1, tzinfo=UTC)

    @property
    def period(self) -> Period:
        return Period(self.start, self.end)

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"
