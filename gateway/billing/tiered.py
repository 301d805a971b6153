"""Bill lines for models with volume tiers: the month's rows walked in ledger order, each split across the tiers
its tokens fall in (gateway.domain.tiers) and costed at its price point's tier prices.

A usage row's own `cost` is its flat (first-tier) cost, written when the row is inserted: only the bill knows
where in the month's volume a row falls. Rows whose price point has no tiers keep that stored cost."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from gateway.billing.prices import PricePoint, point_at, request_cost
from gateway.crud.usage import ModelTotals
from gateway.domain.period import Month
from gateway.domain.tiers import split

ZERO = Decimal(0)


@dataclass(slots=True)
class _Sum:
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: Decimal = ZERO

    def add(self, request: bool, prompt: int, completion: int, cached: int, cost: Decimal) -> None:
        self.requests += request
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.cached_tokens += cached
        self.cost += cost


def tiered_models(history: dict[str, list[PricePoint]]) -> set[str]:
    """Models with tiers in any of their price points."""
    return {model for model, points in history.items() if any(p.tiered for p in points)}


def tiered_totals(rows: Iterable, history: dict[str, list[PricePoint]], discount: Callable[[str], Decimal], *,
                  by_prompt_version: bool = False,
                  since: datetime | None = None) -> list[tuple[str | None, ModelTotals]]:
    """(prompt version or None, totals) per tenant, model, kind and tier — and prompt version when asked — from
    `rows` (tenant, model, kind, prompt version, prompt, completion and cached tokens, cache hit, cost, created_at)
    in ledger order per tenant and model (gateway.crud.usage.iter_model_rows), starting at a month's start:
    the volume restarts with each calendar month. Rows before `since` count toward the volume only (a period
    that starts mid-month). Each row counts as one request in the tier its first token falls in.

    A line's tiered cost is rounded once per price point (and cache hit or not) it holds, not once per row: the
    walk only counts tokens per row, which keeps a month of rows cheap to bill."""
    sums: dict[tuple, _Sum] = {}
    # (line key, price point, tier, cache hit) -> [uncached prompt, cached prompt, completion] tokens to cost
    tallies: dict[tuple, list[int]] = {}
    month: Month | None = None
    volume: dict[tuple[str, str], int] = {}  # (tenant, model) -> its tokens so far in `month`
    points: dict[int, PricePoint] = {}  # id -> point: a tally's key holds the id (hashing a point's Decimals is slow)
    for tenant, model, kind, pv, prompt, completion, cached, hit, cost, created in rows:
        if month is None or not month.start <= created < month.end:
            # A tenant's rows of one model and month come together: the volume so far belongs to rows done with.
            month, volume = Month.containing(created), {}
        start = volume.get((tenant, model), 0)
        volume[(tenant, model)] = start + prompt + completion
        if since is not None and created < since:
            continue
        line = (tenant, model, kind, pv if by_prompt_version else None)
        point = point_at(history.get(model, []), created)
        if point is None or not point.tiered:
            # No tiers at its time (or no price at all: a NULL cost, as bills show it): the row's stored cost.
            sums.setdefault((*line, 1), _Sum()).add(True, prompt, completion, cached, cost or ZERO)
            continue
        points[id(point)] = point
        for i, piece in enumerate(split(point.tiers, start=start, prompt_tokens=prompt, completion_tokens=completion,
                                        cached_tokens=cached)):
            sums.setdefault((*line, piece.tier), _Sum()).add(i == 0, piece.prompt_tokens, piece.completion_tokens,
                                                             piece.cached_tokens, ZERO)
            tally = tallies.setdefault((line, id(point), piece.tier, hit), [0, 0, 0])
            tally[0] += piece.prompt_tokens - piece.cached_tokens
            tally[1] += piece.cached_tokens
            tally[2] += piece.completion_tokens
    for ((t, m, k, pv), point_id, tier, hit), (uncached, cached, completion) in tallies.items():
        point = points[point_id]
        sums[(t, m, k, pv, tier)].cost += request_cost(
            point, prompt_tokens=uncached + cached, completion_tokens=completion, cached_tokens=cached,
            cache_hit=hit, discount=discount(m) if k == "batch" else ZERO, tier=point.tiers[tier - 1])
    return [(pv, ModelTotals(tenant_id=t, model=m, kind=k, requests=s.requests, prompt_tokens=s.prompt_tokens,
                             completion_tokens=s.completion_tokens, cached_tokens=s.cached_tokens, cost=s.cost,
                             tier=tier))
            for (t, m, k, pv, tier), s in sums.items()]
