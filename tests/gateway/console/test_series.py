"""Ledger rows into the console's headline figures and chart columns."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from gateway.console.rates import TokenRate
from gateway.console.series import buckets, daily, headline
from gateway.crud.usage_window import UsagePoint

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def point(minute: float, *, status="ok", completion=10, cost="0.001", hit=False, ttft=100.0) -> UsagePoint:
    return UsagePoint(T0 + timedelta(minutes=minute), status, 5, completion, Decimal(cost), hit, ttft, "v")


def test_headline():
    points = [point(1, ttft=100), point(2, ttft=300), point(3, status="error", completion=0, ttft=None),
              point(4, hit=True, ttft=1)]
    h = headline(points, timedelta(hours=1))
    assert h.requests == 4 and h.requests_per_s == 4 / 3600 and h.output_tokens_per_s == 30 / 3600
    assert h.error_rate == 0.25 and h.cache_hit_rate == 0.25
    assert (h.ttft_p50_ms, h.ttft_p99_ms) == (100, 300)  # cache hits are not first tokens
    assert h.cost == Decimal("0.004")


def test_headline_of_nothing():
    h = headline([], timedelta(hours=1))
    assert h.requests == 0 and h.error_rate is None and h.ttft_p50_ms is None and h.cost == 0


def test_buckets_put_each_row_in_its_minute():
    cols = buckets([point(0.5), point(0.7), point(2.1, status="error")], start=T0, end=T0 + timedelta(minutes=3),
                   step_s=60)
    assert cols["x"] == [int(T0.timestamp()) + 60 * i for i in range(3)]
    assert cols["requests_per_s"] == [2 / 60, 0, 1 / 60]
    assert cols["error_rate"] == [0, None, 1]
    assert cols["ttft_p99_ms"] == [100, None, 100]


def test_daily_sums_tokens_and_cost_per_day():
    start = datetime(2026, 12, 1, tzinfo=UTC)
    cols = daily([point(0), point(60 * 24 + 5), point(60 * 24 + 6)], start=start, end=start + timedelta(days=3))
    assert cols["tokens"] == [15, 30, 0] and cols["cost"] == [0.001, 0.002, 0]


def test_token_rate_is_the_counter_slope():
    r = TokenRate()
    assert r.rate("v", 100, 10.0) is None
    assert r.rate("v", 160, 13.0) == 20.0
    assert r.rate("v", 0, 14.0) == 0.0  # a restarted counter never reads negative
