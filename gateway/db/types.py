"""Column types that behave the same on SQLite and PostgreSQL."""
from __future__ import annotations

from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal

from sqlalchemy import BigInteger, DateTime, Numeric
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

MONEY_SCALE = 10  # decimal places kept for prices and costs
MONEY_QUANTUM = Decimal(1).scaleb(-MONEY_SCALE)


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in and out. SQLite has no time zones, so it stores naive UTC."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Money(TypeDecorator[Decimal]):
    """Exact decimals. PostgreSQL: NUMERIC(20, 10). SQLite would round NUMERIC through
    floats, so there it is an integer count of 1e-10 units, and SUM() stays exact."""

    impl = Numeric(20, MONEY_SCALE)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(BigInteger())
        return dialect.type_descriptor(Numeric(20, MONEY_SCALE, asdecimal=True))

    def process_bind_param(self, value: Decimal | int | str | None, dialect: Dialect):
        if value is None:
            return None
        exact = Decimal(value).quantize(MONEY_QUANTUM, rounding=ROUND_HALF_EVEN)
        return int(exact.scaleb(MONEY_SCALE)) if dialect.name == "sqlite" else exact

    def process_result_value(self, value, dialect: Dialect) -> Decimal | None:
        if value is None:
            return None
        if dialect.name == "sqlite":
            return Decimal(int(value)).scaleb(-MONEY_SCALE).quantize(MONEY_QUANTUM)
        return Decimal(value).quantize(MONEY_QUANTUM)
