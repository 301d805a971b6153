"""Per-bucket ledger sums into the console's headline figures and chart columns."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from gateway.console.rates import TokenRate
from gateway.console.series import columns, daily, headline
from gateway.crud.usage_buckets import Bucket

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def bucket(index: int, requests: int = 2, *, errors=0, hits=0, cost="0.001") -> Bucket:
    return Bucket(index, requests, errors, hits, 5 * requests, 10 * requests, Decimal(cost))


def test_headline():
    h = headline([bucket(1), bucket(2, errors=1, hits=1)], [100, 300, 200], timedelta(hours=1))
    assert h.requests == 4 and h.requests_per_s == 4 / 3600 and h.output_tokens_per_s == 40 / 3600
    assert h.error_rate == 0.25 and h.cache_hit_rate == 0.25
    assert (h.ttft_p50_ms, h.ttft_p99_ms) == (200, 300)
    assert h.cost == Decimal("0.002")


def test_headline_of_nothing():
    h = headline([], [], timedelta(hours=1))
    assert h.requests == 0 and h.error_rate is None and h.ttft_p50_ms is None and h.cost == 0


def test_columns_fill_empty_buckets():
    cols = columns([bucket(0, 2), bucket(2, 1, errors=1), bucket(9)], [(0, 100.0), (0, 20.0), (2, 7.0)],
                   start=T0, end=T0 + timedelta(minutes=3), step_s=60)
    assert cols["x"] == [int(T0.timestamp()) + 60 * i for i in range(3)]
    assert cols["requests_per_s"] == [2 / 60, 0, 1 / 60]
    assert cols["error_rate"] == [0, None, 1]
    assert cols["ttft_p50_ms"] == [20.0, None, 7.0] and cols["ttft_p99_ms"] == [100.0, None, 7.0]
    assert cols["cost"] == [0.001, 0, 0.001]


def test_daily_tokens_and_cost():
    start = datetime(2026, 12, 1, tzinfo=UTC)
    cols = daily([bucket(0, 1), bucket(1, 2, cost="0.002")], start=start, end=start + timedelta(days=3))
    assert cols["tokens"] == [15, 30, 0] and cols["cost"] == [0.001, 0.002, 0]
    assert cols["x"][1] - cols["x"][0] == 86400


def test_token_rate_is_the_counter_slope():
    r = TokenRate()
    assert r.rate("v", 100, 10.0) is None
    assert r.rate("v", 160, 13.0) == 20.0
    assert r.rate("v", 0, 14.0) == 0.0  # a restarted counter never reads negative
