"""The facade routes call: reserve a request's worst case before it runs, settle to what it used.

Requests and tokens are the same code: a request costs 1 against a requests limit and its
tokens against a tokens limit and the month's budget, all reserved in one atomic step.
"""
from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from gateway.api.errors import insufficient_quota, rate_limited
from gateway.limits.limit import Budget, RateLimit
from gateway.limits.storage import Storage
from gateway.limits.strategy import STRATEGIES, Check, budget_check

MonthUsage = Callable[[str, datetime], Awaitable[int]]  # (tenant_id, month_start) -> tokens billed


class LimitedPrincipal(Protocol):
    tenant_id: str
    key_id: str
    rpm: int | None
    tpm: int | None
    key_rpm: int | None
    key_tpm: int | None
    monthly_token_budget: int | None


@dataclass(slots=True)
class Reservation:
    token_keys: list[str]  # TPM counters charged `tokens`
    tokens: int
    budget_key: str | None
    budget_granted: int  # may be less than `tokens` for a stream metered as it flows
    budget_limit: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    settled: bool = False

    @property
    def budget_limited(self) -> bool:
        return self.budget_key is not None


class Limiter:
    def __init__(self, storage: Storage, *, month_usage: MonthUsage, strategy: str = "sliding",
                 window_s: float = 60.0, clock: Callable[[], float] = time.time) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {sorted(STRATEGIES)}, got {strategy!r}")
        self.storage = storage
        self._strategy = STRATEGIES[strategy]()
        self._month_usage = month_usage
        self._window_s = window_s
        self._clock = clock

    async def start(self) -> None:
        await self.storage.start()

    async def stop(self) -> None:
        await self.storage.stop()

    def _limits(self, p: LimitedPrincipal) -> list[RateLimit]:
        spec = [(p.rpm, "requests", f"tenant:{p.tenant_id}"), (p.tpm, "tokens", f"tenant:{p.tenant_id}"),
                (p.key_rpm, "requests", f"key:{p.key_id}"), (p.key_tpm, "tokens", f"key:{p.key_id}")]
        return [RateLimit(amount, self._window_s, unit, scope) for amount, unit, scope in spec if amount is not None]

    async def reserve(self, principal: LimitedPrincipal, est_tokens: int, *,
                      min_tokens: int | None = None) -> Reservation:
        """Charge one request and `est_tokens` (the worst case) against every limit that applies.

        With `min_tokens`, the month's budget may grant less than `est_tokens` (but at least
        `min_tokens`): the caller then meters the rest with `extend` as tokens arrive.
        Raises 429 rate_limit_exceeded (with Retry-After) or 429 insufficient_quota."""
        now = self._clock()
        limits = self._limits(principal)
        checks = [self._strategy.check(lim, cost=1 if lim.unit == "requests" else est_tokens, now=now)
                  for lim in limits]
        budget = None
        if principal.monthly_token_budget is not None:
            budget = Budget(principal.monthly_token_budget, principal.tenant_id)
            checks.append(budget_check(budget, cost=est_tokens, min_cost=min_tokens or est_tokens, now=now))
        outcome = await self._reserve_seeded(checks, principal.tenant_id, now)
        headers = _headers(limits, checks, outcome.used)
        if outcome.status == 0:
            refused = checks[outcome.index]
            if refused.must_exist:
                raise insufficient_quota("You exceeded your current quota: the month's token budget is spent.")
            raise rate_limited(f"Rate limit reached for {refused.name.split(':')[0]} "
                               f"({refused.limit} {refused.name.split(':')[2]} per {int(self._window_s)}s).",
                               retry_after=refused.reset_in_s, headers=headers)
        token_keys = [c.keys[0] for c, lim in zip(checks, limits) if lim.unit == "tokens"]
        if budget is None:
            return Reservation(token_keys, est_tokens, None, est_tokens, 0, headers)
        return Reservation(token_keys, est_tokens, checks[-1].keys[0], outcome.granted[-1], budget.tokens, headers)

    async def _reserve_seeded(self, checks: list[Check], tenant_id: str, now: float):
        for _ in range(3):
            outcome = await self.storage.reserve(checks)
            if outcome.status != -1:
                return outcome
            # First use of the month's counter here: start it from what the ledger already billed.
            check = checks[outcome.index]
            used = await self._month_usage(tenant_id, Budget.month_start(now))
            await self.storage.seed(check.keys[0], used, check.ttl_s)
        raise RuntimeError(f"budget counter {checks[-1].keys[0]} vanished while seeding it")

    async def extend(self, reservation: Reservation, tokens: int) -> int:
        """Grant up to `tokens` more from the month's budget; returns what was granted (maybe 0)."""
        if reservation.budget_key is None:
            reservation.budget_granted += tokens
            return tokens
        check = Check("budget", (reservation.budget_key,), (1.0,), reservation.budget_limit, tokens, 1,
                      0.0, must_exist=True)
        outcome = await self.storage.reserve([check])
        granted = outcome.granted[0] if outcome.status == 1 else 0
        reservation.budget_granted += granted
        return granted

    async def settle(self, reservation: Reservation, actual_tokens: int) -> None:
        """Give back what the request reserved but did not use (or charge what it overshot)."""
        if reservation.settled:
            return
        reservation.settled = True
        deltas = [(k, actual_tokens - reservation.tokens) for k in reservation.token_keys]
        if reservation.budget_key is not None:
            deltas.append((reservation.budget_key, actual_tokens - reservation.budget_granted))
        await self.storage.adjust(deltas)


def _headers(limits: list[RateLimit], checks: list[Check], used: list[int]) -> dict[str, str]:
    """x-ratelimit-* for the tightest requests limit and the tightest tokens limit."""
    out: dict[str, str] = {}
    for unit in ("requests", "tokens"):
        rows = [(c.limit - u, c.limit) for lim, c, u in zip(limits, checks, used) if lim.unit == unit]
        if rows:
            remaining, limit = min(rows)
            out[f"x-ratelimit-limit-{unit}"] = str(limit)
            out[f"x-ratelimit-remaining-{unit}"] = str(max(0, remaining))
    return out
