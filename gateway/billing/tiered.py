"""Bill lines for models with volume tiers: the month's rows walked in ledger order, each split across the tiers
its tokens fall in (gateway.billing.tiers) and costed at its price point's tier prices.

A usage row's own `cost` is its flat (first-tier) cost, written when the row is inserted: only the bill knows
where in the month's volume a row falls. Rows whose price point has no tiers keep that stored cost."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from gateway.billing.period import Month
from gateway.billing.prices import PricePoint, point_at, request_cost
from gateway.billing.tiers import Slice, split
from gateway.crud.usage import ModelTotals

ZERO = Decimal(0)


@dataclass(slots=True)
class _Sum:
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: Decimal = ZERO


def tiered_models(history: dict[str, list[PricePoint]]) -> set[str]:
    """Models with tiers in any of their price points."""
    return {model for model, points in history.items() if any(p.tiered for p in points)}


def tiered_totals(rows: Iterable, history: dict[str, list[PricePoint]], discount: Callable[[str], Decimal], *,
                  by_prompt_version: bool = False, since: datetime | None = None) -> list[tuple[str | None, ModelTotals]]:
    """(prompt version or None, totals) per tenant, model, kind and tier — and prompt version when asked — from
    `rows` in ledger order per tenant and model (gateway.crud.usage.iter_model_rows), starting at a month's start:
    the volume restarts with each calendar month. Rows before `since` count toward the volume only (a period
    that starts mid-month). Each row counts as one request in the tier its first token falls in."""
    sums: dict[tuple, _Sum] = {}
    volume: dict[tuple[str, str, Month], int] = {}  # (tenant, model, month) -> its tokens so far that month
    for r in rows:
        key = (r.tenant_id, r.model, Month.containing(r.created_at))
        start = volume.get(key, 0)
        volume[key] = start + r.prompt_tokens + r.completion_tokens
        if since is not None and r.created_at < since:
            continue
        point = point_at(history.get(r.model, []), r.created_at)
        pv = r.prompt_version if by_prompt_version else None
        for i, (piece, cost) in enumerate(_costed(r, point, start, discount)):
            s = sums.setdefault((r.tenant_id, r.model, r.kind, piece.tier, pv), _Sum())
            s.requests += i == 0
            s.prompt_tokens += piece.prompt_tokens
            s.completion_tokens += piece.completion_tokens
            s.cached_tokens += piece.cached_tokens
            s.cost += cost
    return [(pv, ModelTotals(tenant_id=t, model=m, kind=k, requests=s.requests, prompt_tokens=s.prompt_tokens,
                             completion_tokens=s.completion_tokens, cached_tokens=s.cached_tokens, cost=s.cost,
                             tier=tier))
            for (t, m, k, tier, pv), s in sums.items()]


def _costed(r, point: PricePoint | None, start: int,
            discount: Callable[[str], Decimal]) -> list[tuple[Slice, Decimal]]:
    if point is None or not point.tiered:
        # No tiers at its time (or no price at all: a NULL cost, as bills show it): the row's stored cost.
        whole = Slice(1, r.cached_tokens, r.prompt_tokens, r.completion_tokens)
        return [(whole, r.cost if r.cost is not None else ZERO)]
    off = discount(r.model) if r.kind == "batch" else ZERO
    return [(piece, request_cost(point, prompt_tokens=piece.prompt_tokens, completion_tokens=piece.completion_tokens,
                                 cached_tokens=piece.cached_tokens, cache_hit=r.cache_hit, discount=off,
                                 tier=point.tiers[piece.tier - 1]))
            for piece in split(point.tiers, start=start, prompt_tokens=r.prompt_tokens,
                               completion_tokens=r.completion_tokens, cached_tokens=r.cached_tokens)]
