"""Query parameters that pick a billing period: ?month=YYYY-MM, or ?start=&end= dates."""
from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Annotated

from fastapi import Depends, Query

from gateway.domain.errors import invalid_request
from gateway.domain.period import Month, Period
from gateway.services.periods import parse_month


def month_query(month: Annotated[str | None, Query(description="YYYY-MM (UTC); default: this month")] = None
                ) -> Month:
    return parse_month(month)


MonthDep = Annotated[Month, Depends(month_query)]


def _day(text: str, param: str) -> datetime:
    try:
        day = date.fromisoformat(text)
    except ValueError as e:
        raise invalid_request(f"{param} must be a date YYYY-MM-DD, got {text!r}", param=param) from e
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def period_query(month: str | None = None, start: str | None = None, end: str | None = None) -> Period:
    """?month=YYYY-MM, or ?start=YYYY-MM-DD&end=YYYY-MM-DD (both days included); default: this month."""
    if month is not None and (start is not None or end is not None):
        raise invalid_request("give either month or start/end, not both", param="month")
    if start is None and end is None:
        return parse_month(month).period
    if start is None or end is None:
        raise invalid_request("start and end go together", param="start" if start is None else "end")
    first, last = _day(start, "start"), _day(end, "end")
    if last < first:
        raise invalid_request("end is before start", param="end")
    if last.year > 9998:
        raise invalid_request("end is too far in the future", param="end")
    return Period(first, last + timedelta(days=1))


PeriodDep = Annotated[Period, Depends(period_query)]
