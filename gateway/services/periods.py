"""The month a request names (?month=YYYY-MM), this month by default; the API and the console both read it."""
from __future__ import annotations

from gateway.db.types import utcnow
from gateway.domain.errors import invalid_request
from gateway.domain.period import Month


def parse_month(text: str | None) -> Month:
    if text is None:
        return Month.containing(utcnow())
    try:
        return Month.parse(text)
    except ValueError as e:
        raise invalid_request(str(e), param="month") from e
