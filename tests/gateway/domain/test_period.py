from datetime import UTC, datetime

import pytest

from gateway.domain.period import Month, Period


def test_month_bounds_and_text():
    m = Month.parse("2026-12")
    assert (m.start, m.end) == (datetime(2026, 12, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))
    assert str(m) == "2026-12"
    assert Month.containing(datetime(2026, 2, 28, 23, 59, tzinfo=UTC)) == Month(2026, 2)


@pytest.mark.parametrize("bad", ["2026-13", "2026-00", "2026-1", "26-01", "2026/01", "", "2026-01-01"])
def test_bad_months(bad):
    with pytest.raises(ValueError):
        Month.parse(bad)


def test_period_needs_aware_ordered_bounds():
    with pytest.raises(ValueError):
        Period(datetime(2026, 1, 2), datetime(2026, 1, 3))
    with pytest.raises(ValueError):
        Period(datetime(2026, 1, 3, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC))
