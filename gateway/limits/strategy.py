"""HOW a limit is counted: a strategy turns a limit and a moment into a `Check`,
the one shape every storage knows how to test-and-reserve atomically:

    sum(weight_i * count(key_i)) + cost <= limit     ->  count(keys[0]) += cost

A fixed window is one key with weight 1. A sliding window counter adds the previous
window's key, weighted by how much of it still overlaps the sliding window.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from gateway.limits.limit import Budget, RateLimit

MONTH_TTL_S = 40 * 24 * 3600  # outlives the month; the next month uses a new key


@dataclass(frozen=True, slots=True)
class Check:
    name: str  # what to report when it refuses ("tenant:t1:requests:60s")
    keys: tuple[str, ...]  # keys[0] receives the cost
    weights: tuple[float, ...]
    limit: int
    cost: int
    min_cost: int  # grant less than `cost` (down to min_cost) when that is all that is left
    ttl_s: float
    must_exist: bool = False  # a budget counter is seeded from the ledger, never from zero
    reset_in_s: float = 0.0  # when the counted window frees up (Retry-After)


class FixedWindow:
    def check(self, limit: RateLimit, *, cost: int, now: float) -> Check:
        start = math.floor(now / limit.window_s) * limit.window_s
        key = f"tollgate:rl:{limit.name}:{int(start)}"
        return Check(limit.name, (key,), (1.0,), limit.amount, cost, cost, ttl_s=limit.window_s * 2,
                     reset_in_s=start + limit.window_s - now)


class SlidingWindow:
    """Sliding window counter: smooth like a log, O(1) memory like a fixed window."""

    def check(self, limit: RateLimit, *, cost: int, now: float) -> Check:
        w = limit.window_s
        start = math.floor(now / w) * w
        overlap = 1.0 - (now - start) / w  # share of the previous window still inside
        cur, prev = (f"tollgate:rl:{limit.name}:{int(s)}" for s in (start, start - w))
        return Check(limit.name, (cur, prev), (1.0, overlap), limit.amount, cost, cost, ttl_s=w * 3,
                     reset_in_s=max(1.0, (start + w - now) * overlap + 1.0))


STRATEGIES: dict[str, type[FixedWindow] | type[SlidingWindow]] = {
    "fixed": FixedWindow,
    "sliding": SlidingWindow,
}


def budget_check(budget: Budget, *, cost: int, min_cost: int, now: float) -> Check:
    """A month's token budget: never a window to wait out, so Retry-After does not apply."""
    return Check(f"tenant:{budget.tenant_id}:month", (budget.key(now),), (1.0,), budget.tokens,
                 cost, min(cost, min_cost), ttl_s=MONTH_TTL_S, must_exist=True)
