"""Ledger rows into chart series and headline figures (pure: no I/O)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from gateway.crud.usage_window import UsagePoint
from gateway.routing.window import percentile

WINDOWS = {"hour": (timedelta(hours=1), 60), "day": (timedelta(days=1), 900)}  # span, bucket seconds


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


def headline(points: Sequence[UsagePoint], span: timedelta) -> Headline:
    seconds = span.total_seconds()
    n = len(points)
    ttfts = [p.ttft_ms for p in points if p.ttft_ms is not None and not p.cache_hit]
    return Headline(
        requests=n, requests_per_s=n / seconds,
        output_tokens_per_s=sum(p.completion_tokens for p in points) / seconds,
        error_rate=sum(p.status == "error" for p in points) / n if n else None,
        ttft_p50_ms=percentile(ttfts, 50), ttft_p99_ms=percentile(ttfts, 99),
        cache_hit_rate=sum(p.cache_hit for p in points) / n if n else None,
        cost=sum((p.cost for p in points), Decimal(0)))


def buckets(points: Sequence[UsagePoint], *, start: datetime, end: datetime, step_s: int) -> dict[str, list]:
    """uPlot's columns: x (Unix seconds of each bucket) then one list per series, a value per bucket."""
    count = max(1, int((end - start).total_seconds() // step_s))
    xs = [int(start.timestamp()) + i * step_s for i in range(count)]
    reqs, toks, errs, hits, cost = ([0] * count for _ in range(5))
    ttft: list[list[float]] = [[] for _ in range(count)]
    for p in points:
        i = min(count - 1, int((p.at - start).total_seconds() // step_s))
        if i < 0:
            continue
        reqs[i] += 1
        toks[i] += p.completion_tokens
        errs[i] += p.status == "error"
        hits[i] += p.cache_hit
        cost[i] += float(p.cost)
        if p.ttft_ms is not None and not p.cache_hit:
            ttft[i].append(p.ttft_ms)
    return {
        "x": xs,
        "requests_per_s": [r / step_s for r in reqs],
        "output_tokens_per_s": [t / step_s for t in toks],
        "error_rate": [e / r if r else None for e, r in zip(errs, reqs)],
        "cache_hit_rate": [h / r if r else None for h, r in zip(hits, reqs)],
        "ttft_p50_ms": [percentile(v, 50) for v in ttft],
        "ttft_p99_ms": [percentile(v, 99) for v in ttft],
        "cost": cost,
    }


def daily(points: Sequence[UsagePoint], *, start: datetime, end: datetime) -> dict[str, list]:
    """Per UTC day of [start, end): tokens (prompt + completion) and cost."""
    days = max(1, (end - start).days)
    xs = [int((start + timedelta(days=i)).timestamp()) for i in range(days)]
    tokens, cost = [0] * days, [0.0] * days
    for p in points:
        i = (p.at - start).days
        if 0 <= i < days:
            tokens[i] += p.prompt_tokens + p.completion_tokens
            cost[i] += float(p.cost)
    return {"x": xs, "tokens": tokens, "cost": cost}
