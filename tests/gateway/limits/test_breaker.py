"""The circuit breaker's state machine, on a fake clock."""
from __future__ import annotations

import pytest

from gateway.limits.storage.breaker import BreakerConfig, CircuitBreaker, State


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def breaker(failures: int = 3, cooldown_s: float = 2.0) -> tuple[CircuitBreaker, Clock]:
    clock = Clock()
    return CircuitBreaker(BreakerConfig(failures=failures, cooldown_s=cooldown_s), clock=clock), clock


def test_opens_after_n_failures_in_a_row():
    b, _ = breaker(failures=3)
    b.failure()
    b.failure()
    assert b.allow()
    b.failure()
    assert b.state is State.OPEN and not b.allow()


def test_a_success_starts_the_count_over():
    b, _ = breaker(failures=2)
    b.failure()
    b.success()
    b.failure()
    assert b.state is State.CLOSED


def test_one_timeout_opens_it():
    b, _ = breaker(failures=5)
    b.failure(timeout=True)
    assert b.state is State.OPEN


def test_one_probe_after_the_cooldown_then_closed_on_success():
    b, clock = breaker(cooldown_s=2.0)
    b.failure(timeout=True)
    assert not b.try_probe()  # still cooling down
    assert b.retry_after_s() == pytest.approx(2.0)
    clock.now += 2.0
    assert b.try_probe()
    assert b.state is State.HALF_OPEN
    assert not b.try_probe() and not b.allow()  # exactly one probe; callers still kept off
    b.probed(True)
    assert b.state is State.CLOSED and b.allow() and b.retry_after_s() == 0.0


def test_a_failed_probe_opens_it_for_another_cooldown():
    b, clock = breaker(cooldown_s=2.0)
    b.failure(timeout=True)
    clock.now += 5.0
    assert b.try_probe()
    b.probed(False)
    assert b.state is State.OPEN
    assert b.retry_after_s() == pytest.approx(2.0)
    clock.now += 1.0
    assert not b.try_probe()
    clock.now += 1.0
    assert b.try_probe()


def test_late_outcomes_do_not_move_an_open_breaker():
    b, clock = breaker(cooldown_s=2.0)
    b.failure(timeout=True)
    clock.now += 1.5
    b.failure(timeout=True)  # a call that started before it opened: no new cool-down
    b.success()  # nor does a late success close it: only the probe does
    assert b.state is State.OPEN
    clock.now += 0.5
    assert b.try_probe()


def test_probed_without_a_probe_is_a_bug():
    b, _ = breaker()
    with pytest.raises(RuntimeError):
        b.probed(True)


@pytest.mark.parametrize("kwargs", [{"failures": 0}, {"cooldown_s": 0}])
def test_config_is_validated(kwargs):
    with pytest.raises(ValueError):
        BreakerConfig(**kwargs)
