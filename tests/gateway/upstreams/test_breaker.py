from __future__ import annotations

import pytest

from gateway.upstreams.breaker import BreakerConfig, CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_opens_after_consecutive_failures_then_lets_one_trial_through():
    clock = Clock()
    b = CircuitBreaker(BreakerConfig(failures=3, cooldown_s=10), clock=clock)
    for _ in range(2):
        b.failed()
    b.succeeded()  # not consecutive any more
    for _ in range(3):
        assert b.try_acquire()
        b.failed()
    assert b.state == "open" and not b.try_acquire() and b.retry_after_s() == 10
    clock.now = 10
    assert b.state == "half_open" and b.try_acquire() and not b.try_acquire()  # one trial at a time
    b.failed()
    assert b.state == "open"  # the trial failed: open again, a full cooldown
    clock.now = 20
    assert b.try_acquire()
    b.succeeded()
    assert b.state == "closed" and b.try_acquire()


def test_a_released_trial_frees_the_half_open_slot():
    clock = Clock()
    b = CircuitBreaker(BreakerConfig(failures=1, cooldown_s=1), clock=clock)
    b.failed()
    clock.now = 1
    assert b.try_acquire()
    b.released()
    assert b.try_acquire()


def test_config_is_validated():
    with pytest.raises(ValueError):
        BreakerConfig(failures=0)
    with pytest.raises(ValueError):
        BreakerConfig(cooldown_s=0)
