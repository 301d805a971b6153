"""The limiter over both storages: atomic all-or-nothing reservations, settle, budgets seeded
from the ledger, and Retry-After."""
from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass

import pytest

from gateway.limits.errors import LimitError, QuotaExceeded, RateLimited
from gateway.limits.limiter import Limiter
from gateway.limits.storage.memory import MemoryStorage
from gateway.limits.storage.redis import RedisStorage

pytestmark = pytest.mark.asyncio(loop_scope="session")
REDIS_URL = "redis://127.0.0.1:6379/0"


@dataclass
class P:
    tenant_id: str
    key_id: str = "k"
    rpm: int | None = None
    tpm: int | None = None
    key_rpm: int | None = None
    key_tpm: int | None = None
    monthly_token_budget: int | None = None


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def make_limiter(request):
    made = []

    async def make(*, used: int = 0, strategy: str = "sliding", clock=None) -> Limiter:
        async def month_usage(tenant_id, month_start):
            return used
        clock = clock or Clock()
        storage = MemoryStorage(clock) if request.param == "memory" else RedisStorage(REDIS_URL)
        limiter = Limiter(storage, month_usage=month_usage, strategy=strategy, clock=clock)
        await limiter.start()
        made.append(limiter)
        return limiter

    yield make
    for limiter in made:
        await limiter.stop()


def tenant(**limits) -> P:
    return P(tenant_id=uuid.uuid4().hex, key_id=uuid.uuid4().hex, **limits)


async def test_rpm_refuses_with_retry_after_and_headers(make_limiter):
    limiter = await make_limiter(strategy="fixed")
    p = tenant(rpm=2)
    first = await limiter.reserve(p, 10)
    assert first.headers["x-ratelimit-limit-requests"] == "2"
    assert first.headers["x-ratelimit-remaining-requests"] == "1"
    await limiter.reserve(p, 10)
    with pytest.raises(RateLimited) as e:
        await limiter.reserve(p, 10)
    assert e.value.code == "rate_limit_exceeded"
    assert e.value.retry_after_s > 0
    assert e.value.headers["x-ratelimit-remaining-requests"] == "0"


async def test_refusal_charges_nothing(make_limiter):
    limiter = await make_limiter()
    p = tenant(rpm=100, tpm=100)
    with pytest.raises(LimitError):
        await limiter.reserve(p, 101)  # the tokens limit refuses...
    r = await limiter.reserve(p, 100)  # ...and the request limit was not charged either
    assert r.headers["x-ratelimit-remaining-requests"] == "99"
    assert r.headers["x-ratelimit-remaining-tokens"] == "0"


async def test_settle_returns_unused_tokens(make_limiter):
    limiter = await make_limiter()
    p = tenant(tpm=100)
    r = await limiter.reserve(p, 80)
    await limiter.settle(r, 30)
    await limiter.settle(r, 30)  # settling twice changes nothing
    r2 = await limiter.reserve(p, 70)
    assert r2.headers["x-ratelimit-remaining-tokens"] == "0"


async def test_key_limits_apply_beside_tenant_limits(make_limiter):
    limiter = await make_limiter()
    p = tenant(rpm=100, key_rpm=1)
    await limiter.reserve(p, 1)
    with pytest.raises(RateLimited) as e:
        await limiter.reserve(p, 1)
    assert "key" in e.value.message


async def test_budget_is_seeded_from_the_ledger(make_limiter):
    limiter = await make_limiter(used=950)
    p = tenant(monthly_token_budget=1000)
    await limiter.reserve(p, 50)
    with pytest.raises(QuotaExceeded) as e:
        await limiter.reserve(p, 1)
    assert e.value.code == "insufficient_quota"


async def test_partial_budget_grant_and_extend(make_limiter):
    limiter = await make_limiter(used=0)
    p = tenant(monthly_token_budget=100)
    r = await limiter.reserve(p, 150, min_tokens=20)  # a stream: admitted with what is left
    assert r.budget_granted == 100
    assert await limiter.extend(r, 10) == 0
    await limiter.settle(r, 40)  # used 40 of the 100 granted
    r2 = await limiter.reserve(p, 60)
    assert r2.budget_granted == 60
    assert await limiter.extend(r2, 5) == 0


async def test_concurrent_reservations_never_exceed_the_budget(make_limiter):
    limiter = await make_limiter()
    p = tenant(monthly_token_budget=1000)

    async def one():
        try:
            return await limiter.reserve(p, 100)
        except LimitError:
            return None

    got = [r for r in await asyncio.gather(*(one() for _ in range(200))) if r is not None]
    assert len(got) == 10


async def test_sliding_window_weighs_the_previous_window(make_limiter):
    clock = Clock()
    clock.now = 1_800_000_000.0 - (1_800_000_000.0 % 60)  # the start of a window
    limiter = await make_limiter(clock=clock)
    p = tenant(rpm=10)
    for _ in range(10):
        await limiter.reserve(p, 1)
    clock.now += 60 + 15  # 15 s into the next window: 3/4 of the previous one still counts
    for _ in range(2):
        await limiter.reserve(p, 1)
    with pytest.raises(LimitError):
        await limiter.reserve(p, 1)  # 10 * 0.75 + 3 > 10


async def test_remaining_never_promises_a_request_the_window_refuses(make_limiter):
    # One request in the last tenth of a second of a window, one just after it: the sliding count is
    # 1 * 0.998 + 1, so rpm 2 has no room left and the header must say 0, not floor(1.998) = 1.
    clock = Clock()
    start = 1_800_000_000.0 - (1_800_000_000.0 % 60)
    clock.now = start + 59.9
    limiter = await make_limiter(clock=clock)
    p = tenant(rpm=2)
    assert (await limiter.reserve(p, 1)).headers["x-ratelimit-remaining-requests"] == "1"
    clock.now = start + 60.1
    assert (await limiter.reserve(p, 1)).headers["x-ratelimit-remaining-requests"] == "0"
    with pytest.raises(RateLimited) as e:
        await limiter.reserve(p, 1)
    assert e.value.headers["x-ratelimit-remaining-requests"] == "0"


async def test_unknown_strategy_is_refused():
    with pytest.raises(ValueError):
        Limiter(MemoryStorage(), month_usage=None, strategy="leaky")
