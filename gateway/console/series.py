"""Per-bucket ledger sums into chart columns and headline figures (pure: no I/O)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from gateway.crud.usage_buckets import Bucket
from gateway.routing.window import percentile

WINDOWS = {"hour": (timedelta(hours=1), 60), "day": (timedelta(days=1), 900)}  # span, bucket seconds
DAY_S = 86400


@dataclass(frozen=True, slots=True)
class Headline:
    requests: int
    requests_per_s: float
    output_tokens_per_s: float
    error_rate: float | None
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    cache_hit_rate: float | None
    cost: Decimal


def headline(buckets: Sequence[Bucket], ttfts: Sequence[float], span: timedelta) -> Headline:
    seconds = span.total_seconds()
    n = sum(b.requests for b in buckets)
    return Headline(
        requests=n, requests_per_s=n / seconds,
        output_tokens_per_s=sum(b.completion_tokens for b in buckets) / seconds,
        error_rate=sum(b.errors for b in buckets) / n if n else None,
        ttft_p50_ms=percentile(list(ttfts), 50), ttft_p99_ms=percentile(list(ttfts), 99),
        cache_hit_rate=sum(b.cache_hits for b in buckets) / n if n else None,
        cost=sum((b.cost for b in buckets), Decimal(0)))


def _count(start: datetime, end: datetime, step_s: int) -> int:
    return max(1, int((end - start).total_seconds() // step_s))


def columns(buckets: Sequence[Bucket], ttfts: Sequence[tuple[int, float]], *, start: datetime, end: datetime,
            step_s: int) -> dict[str, list]:
    """uPlot's columns: x (Unix seconds of each bucket) then one list per series, a value per bucket."""
    count = _count(start, end, step_s)
    by_index = {b.index: b for b in buckets if 0 <= b.index < count}
    times: list[list[float]] = [[] for _ in range(count)]
    for i, ms in ttfts:
        if 0 <= i < count:
            times[i].append(ms)
    rows = [by_index.get(i) for i in range(count)]
    return {
        "x": [int(start.timestamp()) + i * step_s for i in range(count)],
        "requests_per_s": [b.requests / step_s if b else 0 for b in rows],
        "output_tokens_per_s": [b.completion_tokens / step_s if b else 0 for b in rows],
        "error_rate": [b.errors / b.requests if b else None for b in rows],
        "cache_hit_rate": [b.cache_hits / b.requests if b else None for b in rows],
        "ttft_p50_ms": [percentile(t, 50) for t in times],
        "ttft_p99_ms": [percentile(t, 99) for t in times],
        "cost": [float(b.cost) if b else 0 for b in rows],
    }


def daily(buckets: Sequence[Bucket], *, start: datetime, end: datetime) -> dict[str, list]:
    """Per UTC day of [start, end) (buckets of DAY_S from start): tokens (prompt + completion) and cost."""
    count = _count(start, end, DAY_S)
    tokens, cost = [0] * count, [0.0] * count
    for b in buckets:
        if 0 <= b.index < count:
            tokens[b.index] = b.prompt_tokens + b.completion_tokens
            cost[b.index] = float(b.cost)
    return {"x": [int(start.timestamp()) + i * DAY_S for i in range(count)], "tokens": tokens, "cost": cost}
