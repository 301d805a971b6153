"""The limiter while its shared store fails, driven directly: "local" counts in process (each
replica its share, budgets from the ledger), "closed" refuses; on recovery the budget counters are
set from the ledger before the breaker closes. The shared store here is a MemoryStorage behind a
switch; tests/faults/test_redis_faults.py does the same to a real Redis process."""
from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass

import pytest

from gateway.limits.errors import LimitsUnavailable, QuotaExceeded, RateLimited
from gateway.limits.failover import FailoverConfig
from gateway.limits.limit import Budget
from gateway.limits.limiter import Limiter
from gateway.limits.reservation import LOCAL, SHARED
from gateway.limits.storage import StorageUnavailable
from gateway.limits.storage.breaker import BreakerConfig, State
from gateway.limits.storage.memory import MemoryStorage


@dataclass
class P:
    tenant_id: str
    key_id: str = "k"
    rpm: int | None = None
    tpm: int | None = None
    key_rpm: int | None = None
    key_tpm: int | None = None
    monthly_token_budget: int | None = None


def tenant(**limits) -> P:
    return P(tenant_id=uuid.uuid4().hex, key_id=uuid.uuid4().hex, **limits)


class Switchable:
    """A shared store that can fail like a dead server (or a hung one: `timeout`), keeping its counts
    meanwhile the way a paused Redis does. Counts the calls that reach it."""

    def __init__(self) -> None:
        self.inner = MemoryStorage()
        self.down, self.timeout, self.calls = False, False, 0

    def _call(self) -> None:
        self.calls += 1
        if self.down:
            raise StorageUnavailable("switched off", timeout=self.timeout)

    async def start(self) -> None:
        self._call()

    async def stop(self) -> None:
        return None

    async def ping(self) -> None:
        self._call()

    async def reserve(self, checks):
        self._call()
        return await self.inner.reserve(checks)

    async def adjust(self, deltas):
        self._call()
        await self.inner.adjust(deltas)

    async def seed(self, key, value, ttl_s):
        self._call()
        return await self.inner.seed(key, value, ttl_s)

    async def overwrite(self, values, ttl_s):
        self._call()
        await self.inner.overwrite(values, ttl_s)

    def count(self, key: str) -> int | None:
        return self.inner._get(key)


class Ledger:
    """What the usage ledger billed, per tenant: the month's budget is read from here."""

    def __init__(self) -> None:
        self.billed: dict[str, int] = {}

    async def month_usage(self, tenant_id, month_start) -> int:
        return self.billed.get(tenant_id, 0)

    def bill(self, tenant_id: str, tokens: int) -> None:
        self.billed[tenant_id] = self.billed.get(tenant_id, 0) + tokens


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


@pytest.fixture
async def make(ledger):
    made = []

    async def make(*, mode: str = "local", replicas: int = 1, cooldown_s: float = 0.05,
                   failures: int = 3) -> tuple[Limiter, Switchable]:
        shared = Switchable()
        limiter = Limiter(shared, month_usage=ledger.month_usage, failover=FailoverConfig(
            on_shared_down=mode, replicas=replicas, breaker=BreakerConfig(failures=failures, cooldown_s=cooldown_s)))
        await limiter.start()
        made.append(limiter)
        return limiter, shared

    yield make
    for limiter in made:
        await limiter.stop()


async def spend(limiter: Limiter, ledger: Ledger, p: P, tokens: int):
    r = await limiter.reserve(p, tokens)
    await limiter.settle(r, tokens)
    ledger.bill(p.tenant_id, tokens)
    return r


async def until_recovered(limiter: Limiter) -> None:
    """Keep calling (a call may start the probe, or a reconciliation) until the breaker is closed and
    every budget counter counted elsewhere has been set from the ledger."""
    nobody = tenant()
    for _ in range(500):
        if limiter.failover.breaker.state is State.CLOSED and limiter.failover.unreconciled == 0:
            return
        await limiter.reserve(nobody, 1)
        await asyncio.sleep(0.01)
    raise AssertionError(f"the breaker did not close: {limiter.failover.breaker.state}")


def budget_key(p: P) -> str:
    return Budget(p.monthly_token_budget, p.tenant_id).key(time.time())


async def test_local_mode_counts_in_process(make):
    limiter, shared = await make()
    p = tenant(rpm=10)
    assert (await limiter.reserve(p, 5)).store == SHARED
    shared.down = True
    r = await limiter.reserve(p, 5)
    assert r.store == LOCAL and r.headers["x-ratelimit-limit-requests"] == "10"


async def test_the_breaker_keeps_callers_off_a_hung_store(make):
    limiter, shared = await make(cooldown_s=60)
    p = tenant(rpm=100)
    shared.down, shared.timeout = True, True
    for _ in range(20):
        await limiter.reserve(p, 1)
    assert shared.calls == 2  # start(), then the one call that timed out and opened the breaker
    assert limiter.failover.breaker.state is State.OPEN


async def test_errors_open_the_breaker_after_n_in_a_row(make):
    limiter, shared = await make(cooldown_s=60, failures=3)
    shared.down = True
    for _ in range(10):
        await limiter.reserve(tenant(rpm=100), 1)
    assert shared.calls == 1 + 3


async def test_local_limits_are_this_replicas_share(make):
    limiter, shared = await make(replicas=2)
    p = tenant(rpm=10, tpm=1000)
    shared.down = True
    for _ in range(5):
        r = await limiter.reserve(p, 100)
    assert r.headers["x-ratelimit-limit-requests"] == "5" and r.headers["x-ratelimit-limit-tokens"] == "500"
    with pytest.raises(RateLimited) as e:
        await limiter.reserve(p, 100)
    assert e.value.retry_after_s > 0 and e.value.headers["x-ratelimit-remaining-requests"] == "0"


@pytest.mark.parametrize("replicas, allowed", [(1, 100), (4, 25)])
async def test_local_budget_starts_from_the_ledger(make, ledger, replicas, allowed):
    limiter, shared = await make(replicas=replicas)
    p = tenant(monthly_token_budget=1000)
    ledger.bill(p.tenant_id, 900)  # billed before this replica ever counted it
    shared.down = True
    r = await limiter.reserve(p, allowed)  # this replica's share of the 100 left
    assert r.store == LOCAL
    with pytest.raises(QuotaExceeded):
        await limiter.reserve(p, 1)


async def test_closed_mode_refuses_with_retry_after(make):
    limiter, shared = await make(mode="closed", cooldown_s=30)
    p = tenant(rpm=10)
    shared.down, shared.timeout = True, True
    for _ in range(5):
        with pytest.raises(LimitsUnavailable) as e:
            await limiter.reserve(p, 1)
        assert 1 <= e.value.retry_after_s <= 30
    assert shared.calls == 2  # start(), then one timeout; the rest were refused without asking


async def test_recovery_sets_budget_counters_from_the_ledger(make, ledger):
    limiter, shared = await make()
    p = tenant(monthly_token_budget=1000)
    for _ in range(3):
        await spend(limiter, ledger, p, 100)
    shared.down = True  # it keeps its count (300), like a paused Redis
    for _ in range(4):
        assert (await spend(limiter, ledger, p, 100)).store == LOCAL
    shared.down = False
    await until_recovered(limiter)
    assert shared.count(budget_key(p)) == 700  # what the ledger billed, outage included
    for _ in range(3):
        assert (await spend(limiter, ledger, p, 100)).store == SHARED
    with pytest.raises(QuotaExceeded):
        await limiter.reserve(p, 1)


async def test_one_failed_call_is_reconciled_without_an_outage(make, ledger):
    limiter, shared = await make(failures=3)
    p = tenant(monthly_token_budget=1000)
    await spend(limiter, ledger, p, 100)
    shared.down = True
    assert (await spend(limiter, ledger, p, 100)).store == LOCAL  # one error: the breaker stays closed
    shared.down = False
    assert limiter.failover.breaker.state is State.CLOSED and limiter.failover.unreconciled == 1
    await until_recovered(limiter)  # the next call that goes through sets the counter
    assert shared.count(budget_key(p)) == 200


async def test_an_open_local_reservation_is_carried_over_and_settled_locally(make, ledger):
    limiter, shared = await make()
    p = tenant(tpm=10_000, monthly_token_budget=1000)
    await spend(limiter, ledger, p, 100)
    shared.down = True
    r = await limiter.reserve(p, 500)  # still generating when the store comes back
    assert r.store == LOCAL
    shared.down = False
    await until_recovered(limiter)
    key = budget_key(p)
    assert shared.count(key) == 100 + 500  # the ledger, and the open reservation's worst case
    tpm_before = [shared.count(k) for k in r.token_keys]
    assert await limiter.extend(r, 10) == 0  # within its worst case of 500: already held
    await limiter.settle(r, 200)
    ledger.bill(p.tenant_id, 200)
    assert r.store == LOCAL and r.settled
    assert shared.count(key) == 300  # told what it really used
    assert [shared.count(k) for k in r.token_keys] == tpm_before  # its windows were never shared ones


async def test_a_stream_admitted_before_the_outage_may_finish_its_worst_case(make, ledger):
    limiter, shared = await make()
    p = tenant(monthly_token_budget=1000)
    r = await limiter.reserve(p, 300, min_tokens=20)
    r.budget_granted = 50  # as if metered so far
    shared.down = True
    assert await limiter.extend(r, 100) == 100
    assert await limiter.extend(r, 500) == 150  # never past the 300 it was admitted for
    await limiter.settle(r, 300)  # the store is down: settling must not raise
    ledger.bill(p.tenant_id, 300)
    shared.down = False
    await until_recovered(limiter)
    assert shared.count(budget_key(p)) == 300


async def test_closed_mode_grants_no_more_while_the_store_is_down(make):
    limiter, shared = await make(mode="closed")
    p = tenant(monthly_token_budget=1000)
    r = await limiter.reserve(p, 300, min_tokens=20)
    r.budget_granted = 50
    shared.down = True
    assert await limiter.extend(r, 100) == 0
    await limiter.settle(r, 50)


async def test_a_failed_probe_waits_another_cooldown(make, ledger):
    limiter, shared = await make(cooldown_s=0.05, failures=1)
    p = tenant(monthly_token_budget=1000)
    shared.down = True
    await spend(limiter, ledger, p, 100)
    await asyncio.sleep(0.06)
    await limiter.reserve(tenant(), 1)  # starts the probe, which fails
    await asyncio.sleep(0.01)
    assert limiter.failover.breaker.state is State.OPEN
    shared.down = False
    await until_recovered(limiter)
    assert shared.count(budget_key(p)) == 100


def test_config_is_validated():
    with pytest.raises(ValueError):
        FailoverConfig(on_shared_down="open")
    with pytest.raises(ValueError):
        FailoverConfig(replicas=0)
