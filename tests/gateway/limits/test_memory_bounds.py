"""The in-process store stays bounded: expired windows are swept, and at the cap the counters
that expire soonest are evicted, never the ones being written."""
from __future__ import annotations

import pytest

from gateway.limits.limit import Budget, RateLimit
from gateway.limits.storage.memory import MemoryConfig, MemoryStorage
from gateway.limits.strategy import FixedWindow, budget_check

class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def rpm(tenant: str, clock: Clock, amount: int = 10):
    return FixedWindow().check(RateLimit(amount, 60, "requests", f"tenant:{tenant}"), cost=1, now=clock.now)


async def test_a_flood_of_distinct_tenants_stays_under_the_cap():
    clock = Clock()
    store = MemoryStorage(clock, MemoryConfig(max_keys=1000, sweep_interval_s=3600))
    for i in range(20_000):
        clock.now += 0.001  # later tenants' windows expire later
        assert (await store.reserve([rpm(f"t{i}", clock)])).status == 1
        assert len(store) <= 1000
    # The most recent tenants are still counted; the oldest were evicted.
    assert (await store.reserve([rpm("t19999", clock)])).used == [2]
    assert (await store.reserve([rpm("t0", clock)])).used == [1]


async def test_expired_windows_are_swept_without_being_read():
    clock = Clock()
    store = MemoryStorage(clock, MemoryConfig(max_keys=10_000, sweep_interval_s=5))
    for i in range(500):
        await store.reserve([rpm(f"t{i}", clock)])
    assert len(store) == 500
    clock.now += 3600  # every window (ttl 2 minutes) is long gone, and a sweep is due
    await store.reserve([rpm("new", clock)])
    assert len(store) == 1


async def test_eviction_spares_the_counters_being_written():
    clock = Clock()
    store = MemoryStorage(clock, MemoryConfig(max_keys=3, sweep_interval_s=3600))
    budget = Budget(1000, "t-budget")
    await store.seed(budget.key(clock.now), 900, 60)  # expires soonest of all
    for i in range(2):
        await store.reserve([rpm(f"t{i}", clock)])
    # The store is full and the budget counter expires first, but this reservation writes it.
    check = budget_check(budget, cost=50, min_cost=50, now=clock.now)
    out = await store.reserve([rpm("t9", clock), check])
    assert out.status == 1 and out.used[-1] == 950  # not re-created from zero
    assert len(store) <= 3


async def test_counts_are_kept_below_the_cap():
    clock = Clock()
    store = MemoryStorage(clock, MemoryConfig(max_keys=100))
    for _ in range(10):
        out = await store.reserve([rpm("t", clock, amount=10)])
    assert out.used == [10]
    assert (await store.reserve([rpm("t", clock, amount=10)])).status == 0


@pytest.mark.parametrize("kwargs", [{"max_keys": 0}, {"sweep_interval_s": 0}, {"evict_to": 1.0}])
def test_config_is_validated(kwargs):
    with pytest.raises(ValueError):
        MemoryConfig(**kwargs)
