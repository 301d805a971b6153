"""What the limiter does while the shared store (Redis) fails.

A circuit breaker stands in front of the store, so that while it is down requests do not each
wait for a timeout. Then, by `on_shared_down`:

- "local": count in this process instead. Each limit is divided among the gateway replicas, and the
  month's budget starts from the ledger (this replica takes its share of what is left), so limits and
  budgets still hold. A reservation made here is extended and settled here.
- "closed": refuse (LimitsUnavailable) until the store answers again.

Recovery is a probe in the background, one cool-down after the breaker opened: ping, then set every
budget counter that changed meanwhile from the ledger, plus what still-open reservations hold, and
only then close the breaker. Tokens spent during the outage cannot be spent again after it.
"""
from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from gateway.limits.reservation import SHARED, Reservation
from gateway.limits.storage import Storage, StorageUnavailable
from gateway.limits.storage.breaker import BreakerConfig, CircuitBreaker
from gateway.limits.storage.memory import MemoryConfig, MemoryStorage
from gateway.limits.strategy import MONTH_TTL_S

log = logging.getLogger("tollgate.limits")
MonthUsage = Callable[[str, datetime], Awaitable[int]]  # (tenant_id, month_start) -> tokens billed
T = TypeVar("T")
MODES = ("local", "closed")


@dataclass(frozen=True, slots=True)
class FailoverConfig:
    on_shared_down: str = "local"  # "local" | "closed"
    replicas: int = 1  # gateway processes sharing the limits; each counts 1/replicas of them when local
    breaker: BreakerConfig = BreakerConfig()
    local: MemoryConfig = MemoryConfig()

    def __post_init__(self) -> None:
        if self.on_shared_down not in MODES:
            raise ValueError(f"on_shared_down must be one of {MODES}, got {self.on_shared_down!r}")
        if self.replicas < 1:
            raise ValueError(f"replicas must be >= 1, got {self.replicas}")


class Failover:
    def __init__(self, shared: Storage, config: FailoverConfig, *, month_usage: MonthUsage,
                 clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.shared, self.config = shared, config
        self.local = MemoryStorage(clock, config.local)
        self.breaker = CircuitBreaker(config.breaker, clock=monotonic)
        self._month_usage = month_usage
        self._monotonic = monotonic
        self._open: weakref.WeakSet[Reservation] = weakref.WeakSet()  # budget reservations not yet settled
        self._dirty: dict[str, tuple[str, datetime, int]] = {}  # budget key -> (tenant, month, mark no.)
        self._marks = 0
        self._tasks: set[asyncio.Task] = set()  # the probe, or a reconciliation while closed
        self._reconciling = asyncio.Lock()
        self._next_reconcile = 0.0

    @property
    def local_mode(self) -> bool:
        return self.config.on_shared_down == "local"

    @property
    def unreconciled(self) -> int:
        """Budget counters waiting to be set from the ledger."""
        return len(self._dirty)

    def retry_after_s(self) -> float:
        """When a client refused for want of the store should try again."""
        return max(1.0, self.breaker.retry_after_s())

    async def call(self, op: Callable[[Storage], Awaitable[T]]) -> T:
        """Run `op` on the shared store through the breaker; StorageUnavailable at once while it is open."""
        if not self.breaker.allow():
            if self.breaker.try_probe():
                self._spawn(self._recover())
            raise StorageUnavailable("the shared store is failing; the breaker is open")
        try:
            result = await op(self.shared)
        except StorageUnavailable as e:
            was_closed = self.breaker.allow()
            self.breaker.failure(timeout=e.timeout)
            if was_closed and not self.breaker.allow():
                log.warning("shared limits store failing; breaker open, %s",
                            "counting limits in process" if self.local_mode else "refusing requests",
                            extra={"error": str(e)})
            raise
        self.breaker.success()
        if self._dirty and not self._reconciling.locked() and self._monotonic() >= self._next_reconcile:
            # Counted elsewhere while the breaker stayed closed (one failed call), or marked while the
            # probe reconciled: set those counters now.
            self._spawn(self._reconcile_quietly())
        return result

    def track(self, r: Reservation) -> None:
        if r.budget_key is not None:
            self._open.add(r)

    def untrack(self, r: Reservation) -> None:
        self._open.discard(r)

    def mark(self, r: Reservation) -> None:
        """`r`'s budget use went past the shared counter: set that counter from the ledger later."""
        if r.budget_key is None:
            return
        self._marks += 1
        self._dirty[r.budget_key] = (r.tenant_id, r.month_start, self._marks)

    def _spawn(self, coro) -> None:
        task = asyncio.create_task(coro, name="limits-recovery")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _recover(self) -> None:
        """The half-open probe: the store answers, and its budget counters are right, or it stays open."""
        ok = False
        try:
            await self.shared.ping()
            await self._reconcile()
            ok = True
        except StorageUnavailable as e:
            log.info("shared limits store still failing", extra={"error": str(e)})
        except Exception:
            log.exception("setting budget counters from the ledger failed; the breaker stays open")
        finally:
            self.breaker.probed(ok)
        if ok:
            log.warning("shared limits store answers again; breaker closed")

    async def _reconcile_quietly(self) -> None:
        self._next_reconcile = self._monotonic() + self.config.breaker.cooldown_s
        try:
            await self._reconcile()
        except StorageUnavailable as e:
            self.breaker.failure(timeout=e.timeout)
        except Exception:
            log.exception("setting budget counters from the ledger failed; will retry")

    async def _reconcile(self) -> None:
        """Set each marked budget counter to what the ledger billed plus what open reservations hold.
        A counter marked again meanwhile stays marked for the next pass."""
        async with self._reconciling:
            batch = dict(self._dirty)
            if not batch:
                return
            used = {key: await self._month_usage(tenant_id, month)
                    for key, (tenant_id, month, _) in batch.items()}
            held = self._held(set(batch))
            values = {key: used[key] + held.get(key, 0) for key in batch}
            await self.shared.overwrite(values, MONTH_TTL_S)
            for key, entry in batch.items():
                if self._dirty.get(key) == entry:
                    del self._dirty[key]
            # The next outage counts from the ledger again, not from this one's leftovers.
            self.local.forget(list(batch))
        log.info("budget counters set from the ledger", extra={"counters": len(values)})

    def _held(self, keys: set[str]) -> dict[str, int]:
        """What open reservations hold against each of `keys` beyond the ledger: a shared one its grant
        (it settles there); a local one its worst case, carried over to the shared counter (settling
        corrects it)."""
        held: dict[str, int] = {}
        for r in list(self._open):
            if r.budget_key not in keys:
                continue
            if r.store == SHARED:
                amount = r.budget_granted
            else:
                r.carried = amount = max(r.tokens, r.budget_granted)
            held[r.budget_key] = held.get(r.budget_key, 0) + amount
        return held

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.local.stop()
