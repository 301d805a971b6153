"""The failed-attempt throttle: failures counted per address and per key prefix, valid credentials never
refused, throttled lookups bounded to a small lane."""
from __future__ import annotations

import asyncio

import pytest

from gateway.security.auth_throttle import Attempt, AuthThrottle, AuthThrottleConfig, Throttled
from gateway.security.authenticator import InvalidKey


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _throttle(clock=None, **config) -> AuthThrottle:
    return AuthThrottle(AuthThrottleConfig(**{"max_failures": 3, **config}), clock=clock or Clock())


async def _fail(slot):
    raise InvalidKey("Incorrect API key provided.")


async def _pass(slot):
    return "principal"


async def _outcomes(throttle: AuthThrottle, attempt: Attempt, n: int) -> list[str]:
    out = []
    for _ in range(n):
        try:
            await throttle.check(attempt, _fail)
        except InvalidKey:
            out.append("401")
        except Throttled as e:
            assert e.retry_after_s > 0
            out.append("429")
    return out


async def test_failures_past_the_limit_are_429_and_a_valid_credential_still_passes():
    throttle = _throttle()
    bad = Attempt.of("198.51.100.7", "tg-made-up-key-0001")
    assert await _outcomes(throttle, bad, 5) == ["401", "401", "401", "429", "429"]
    same_address = Attempt.of("198.51.100.7", "tg-the-real-key-0002")
    assert await throttle.check(same_address, _pass) == "principal"  # never refused for who else failed there
    assert await throttle.check(bad, _pass) == "principal"  # nor for its own address's and prefix's failures


async def test_addresses_and_prefixes_are_counted_apart():
    throttle = _throttle()
    await _outcomes(throttle, Attempt.of("198.51.100.7", "tg-AAAAAAAAAA-1"), 3)
    # Another address guessing another prefix is untouched; the throttled address is throttled whatever it sends.
    assert await _outcomes(throttle, Attempt.of("198.51.100.8", "tg-BBBBBBBBBB-1"), 1) == ["401"]
    assert await _outcomes(throttle, Attempt.of("198.51.100.7", "tg-CCCCCCCCCC-1"), 1) == ["429"]
    # Guessing the rest of one key prefix from many addresses is throttled by the prefix.
    spread = [Attempt.of(f"203.0.113.{i}", "tg-DDDDDDDDDD" + str(i)) for i in range(5)]
    assert [(await _outcomes(throttle, a, 1))[0] for a in spread] == ["401", "401", "401", "429", "429"]


async def test_the_window_passes_and_success_does_not_launder_failures():
    clock = Clock()
    throttle = _throttle(clock, window_s=60)
    bad = Attempt.of("198.51.100.7", "tg-made-up")
    await _outcomes(throttle, bad, 3)
    await throttle.check(bad, _pass)  # a valid key from the same address resets nothing
    assert await _outcomes(throttle, bad, 1) == ["429"]
    clock.now += 61
    assert throttle.retry_after(bad) is None
    assert await _outcomes(throttle, bad, 1) == ["401"]


async def test_churning_prefixes_does_not_evict_an_address():
    throttle = _throttle(max_clients=10)
    await _outcomes(throttle, Attempt.of("198.51.100.7", "tg-first"), 3)
    for i in range(50):  # fills the prefix table many times over, from the same address
        await _outcomes(throttle, Attempt.of("198.51.100.7", f"tg-{i:09d}"), 1)
    assert throttle.retry_after(Attempt.of("198.51.100.7", "tg-never-seen")) is not None


async def test_throttled_lookups_share_a_bounded_lane_that_times_out_as_429():
    throttle = _throttle(suspect_lookups=2, suspect_wait_s=0.2)
    suspect = Attempt.of("198.51.100.7", "tg-flood")
    await _outcomes(throttle, suspect, 3)
    running, peak, release = 0, 0, asyncio.Event()

    async def lookup(slot):
        nonlocal running, peak
        async with slot:
            running += 1
            peak = max(peak, running)
            await release.wait()
            running -= 1
        return "principal"

    held = [asyncio.create_task(throttle.check(suspect, lookup)) for _ in range(2)]
    await asyncio.sleep(0)
    with pytest.raises(Throttled):  # the lane is full for longer than suspect_wait_s
        await throttle.check(suspect, lookup)
    # An attempt in good standing does not queue behind the lane.
    async with throttle.lookup_slot(Attempt.of("198.51.100.9", "tg-fine")):
        pass
    release.set()
    assert await asyncio.gather(*held) == ["principal", "principal"] and peak == 2
    assert await throttle.check(suspect, lookup) == "principal"  # the lane is free again: a valid key passes


def test_config_is_validated():
    for bad in ({"max_failures": 0}, {"window_s": 0}, {"suspect_lookups": 0}, {"suspect_wait_s": 0}):
        with pytest.raises(ValueError):
            AuthThrottleConfig(**bad)
    assert AuthThrottleConfig().max_failures == 20
