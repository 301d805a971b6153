"""The facade routes call: reserve a request's worst case before it runs, settle to what it used.

Requests and tokens are the same code: a request costs 1 against a requests limit and its
tokens against a tokens limit and the month's budget, all reserved in one atomic step.

Counts live in the shared store; while it fails, `Failover` says whether to count in this process
(each replica its share) or refuse. Refusals are gateway.limits.errors, never HTTP: the API maps them.
"""
from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from gateway.limits.errors import LimitsUnavailable, QuotaExceeded, RateLimited
from gateway.limits.failover import Failover, FailoverConfig, MonthUsage
from gateway.limits.limit import Budget, RateLimit
from gateway.limits.reservation import LOCAL, SHARED, Reservation
from gateway.limits.storage import Outcome, Storage, StorageUnavailable
from gateway.limits.strategy import STRATEGIES, Check, budget_check

__all__ = ["LimitedPrincipal", "Limiter", "MonthUsage", "Reservation"]

T = TypeVar("T")


class LimitedPrincipal(Protocol):
    tenant_id: str
    key_id: str
    rpm: int | None
    tpm: int | None
    key_rpm: int | None
    key_tpm: int | None
    monthly_token_budget: int | None


class Limiter:
    def __init__(self, storage: Storage, *, month_usage: MonthUsage, strategy: str = "sliding",
                 window_s: float = 60.0, clock: Callable[[], float] = time.time,
                 failover: FailoverConfig = FailoverConfig()) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {sorted(STRATEGIES)}, got {strategy!r}")
        self.storage = storage
        self.failover = Failover(storage, failover, month_usage=month_usage, clock=clock)
        self._strategy = STRATEGIES[strategy]()
        self._month_usage = month_usage
        self._window_s = window_s
        self._clock = clock

    async def start(self) -> None:
        await self.storage.start()

    async def stop(self) -> None:
        await self.failover.stop()
        await self.storage.stop()

    async def _on(self, store: str, op: Callable[[Storage], Awaitable[T]]) -> T:
        """Run `op` on a reservation's store: the shared one through its breaker, or the local one."""
        if store == SHARED:
            return await self.failover.call(op)
        return await op(self.failover.local)

    def _limits(self, p: LimitedPrincipal, share: int = 1) -> list[RateLimit]:
        spec = [(p.rpm, "requests", f"tenant:{p.tenant_id}"), (p.tpm, "tokens", f"tenant:{p.tenant_id}"),
                (p.key_rpm, "requests", f"key:{p.key_id}"), (p.key_tpm, "tokens", f"key:{p.key_id}")]
        return [RateLimit(max(1, amount // share), self._window_s, unit, scope)
                for amount, unit, scope in spec if amount is not None]

    async def reserve(self, principal: LimitedPrincipal, est_tokens: int, *,
                      min_tokens: int | None = None) -> Reservation:
        """Charge one request and `est_tokens` (the worst case) against every limit that applies.

        With `min_tokens`, the month's budget may grant less than `est_tokens` (but at least
        `min_tokens`): the caller then meters the rest with `extend` as tokens arrive.
        Raises RateLimited, QuotaExceeded, or LimitsUnavailable (the shared store is failing and
        the failover mode is "closed"). Never waits on a failing store longer than its timeout."""
        now = self._clock()
        try:
            return await self._reserve_in(SHARED, principal, est_tokens, min_tokens, now)
        except StorageUnavailable:
            if not self.failover.local_mode:
                raise LimitsUnavailable("Rate limits cannot be checked right now; please retry shortly.",
                                        retry_after_s=self.failover.retry_after_s()) from None
        return await self._reserve_in(LOCAL, principal, est_tokens, min_tokens, now)

    async def _reserve_in(self, store: str, principal: LimitedPrincipal, est_tokens: int,
                          min_tokens: int | None, now: float) -> Reservation:
        share = 1 if store == SHARED else self.failover.config.replicas
        limits = self._limits(principal, share)
        checks = [self._strategy.check(lim, cost=1 if lim.unit == "requests" else est_tokens, now=now)
                  for lim in limits]
        budget = None
        if principal.monthly_token_budget is not None:
            budget = Budget(principal.monthly_token_budget, principal.tenant_id)
            checks.append(budget_check(budget, cost=est_tokens, min_cost=min_tokens or est_tokens, now=now))
        outcome = await self._reserve_seeded(store, checks, principal.tenant_id, now, share)
        headers = _headers(limits, checks, outcome.used)
        if outcome.status == 0:
            refused = checks[outcome.index]
            if refused.must_exist:
                raise QuotaExceeded("You exceeded your current quota: the month's token budget is spent.")
            raise RateLimited(f"Rate limit reached for {refused.name.split(':')[0]} "
                              f"({refused.limit} {refused.name.split(':')[2]} per {int(self._window_s)}s).",
                              retry_after_s=refused.reset_in_s, headers=headers, unit=refused.name.split(':')[2])
        token_keys = [c.keys[0] for c, lim in zip(checks, limits) if lim.unit == "tokens"]
        if budget is None:
            return Reservation(token_keys, est_tokens, None, est_tokens, 0, headers, store=store,
                               tenant_id=principal.tenant_id)
        r = Reservation(token_keys, est_tokens, checks[-1].keys[0], outcome.granted[-1], budget.tokens, headers,
                        store=store, tenant_id=principal.tenant_id, month_start=Budget.month_start(now))
        self.failover.track(r)
        if store == LOCAL:
            self.failover.mark(r)
        return r

    async def _reserve_seeded(self, store: str, checks: list[Check], tenant_id: str, now: float,
                              share: int) -> Outcome:
        for _ in range(3):
            outcome = await self._on(store, lambda s: s.reserve(checks))
            if outcome.status != -1:
                return outcome
            # First use of the month's counter here: start it from what the ledger already billed
            # (counting locally: plus what the other replicas may spend of what is left).
            check = checks[outcome.index]
            used = await self._month_usage(tenant_id, Budget.month_start(now))
            value = max(used, check.limit - (check.limit - used) // share)
            await self._on(store, lambda s: s.seed(check.keys[0], value, check.ttl_s))  # noqa: B023 (awaited here)
        raise RuntimeError(f"budget counter {checks[-1].keys[0]} vanished while seeding it")

    async def extend(self, reservation: Reservation, tokens: int) -> int:
        """Grant up to `tokens` more from the month's budget; returns what was granted (maybe 0).

        Never raises. If the reservation's store fails, or its local counter is gone (carried over to
        the shared store, which holds its worst case), it may still use up to its own worst case
        (`reservation.tokens`) when counting locally is allowed; otherwise nothing more."""
        r = reservation
        if r.budget_key is None:
            r.budget_granted += tokens
            return tokens
        check = Check("budget", (r.budget_key,), (1.0,), r.budget_limit, tokens, 1, 0.0, must_exist=True)
        within_worst_case = min(tokens, max(0, r.tokens - r.budget_granted))
        try:
            outcome = await self._on(r.store, lambda s: s.reserve([check]))
        except StorageUnavailable:
            self.failover.mark(r)
            granted = within_worst_case if self.failover.local_mode else 0
        else:
            if outcome.status == 1:
                granted = outcome.granted[0]
            elif outcome.status == -1 and r.store == LOCAL:
                granted = within_worst_case
            else:
                granted = 0
            if r.store == LOCAL:
                self.failover.mark(r)
        r.budget_granted += granted
        return granted

    async def shrink(self, reservation: Reservation, tokens: int) -> None:
        """Lower an open reservation's worst case to `tokens` (a request admitted on an upper bound of its
        prompt, now counted exactly), so concurrent requests are judged against what it can really use.
        Never raises, never grows it: on a store failure the reservation keeps its larger hold until settled."""
        r = reservation
        if r.settled or r.carried or tokens >= r.tokens:
            return
        granted = min(r.budget_granted, tokens)
        deltas = [(k, tokens - r.tokens) for k in r.token_keys]
        if r.budget_key is not None:
            deltas.append((r.budget_key, granted - r.budget_granted))
        try:
            await self._on(r.store, lambda s: s.adjust(deltas))
        except StorageUnavailable:
            self.failover.mark(r)
            return
        r.tokens, r.budget_granted = tokens, granted

    async def settle(self, reservation: Reservation, actual_tokens: int) -> None:
        """Give back what the request reserved but did not use (or charge what it overshot), in the
        store that holds it. Never raises: if that store fails, the budget is set from the ledger later."""
        r = reservation
        if r.settled:
            return
        r.settled = True
        deltas = [(k, actual_tokens - r.tokens) for k in r.token_keys]
        if r.budget_key is not None:
            deltas.append((r.budget_key, actual_tokens - r.budget_granted))
        try:
            await self._on(r.store, lambda s: s.adjust(deltas))
            if r.carried:
                await self._on(SHARED, lambda s: s.adjust([(r.budget_key, actual_tokens - r.carried)]))
        except StorageUnavailable:
            self.failover.mark(r)
        finally:
            self.failover.untrack(r)


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
