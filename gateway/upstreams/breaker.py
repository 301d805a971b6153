"""A circuit breaker per upstream: after `failures` consecutive failures it opens for `cooldown_s` (the
upstream's versions are unavailable, so the pipeline goes to fallbacks without waiting on a dead server), then
lets one trial request through (half-open): its success closes the circuit, its failure opens it again."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BreakerConfig:
    failures: int = 5
    cooldown_s: float = 30.0

    def __post_init__(self) -> None:
        if self.failures < 1:
            raise ValueError("breaker failures must be >= 1")
        if self.cooldown_s <= 0:
            raise ValueError("breaker cooldown_s must be > 0")


class CircuitBreaker:
    def __init__(self, config: BreakerConfig = BreakerConfig(), *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config, self._clock = config, clock
        self._failures = 0
        self._opened_at: float | None = None
        self._trial = False  # a half-open trial is in flight

    @property
    def state(self) -> str:
        """"closed" | "open" | "half_open"."""
        if self._opened_at is None:
            return "closed"
        return "open" if self._clock() - self._opened_at < self.config.cooldown_s else "half_open"

    def retry_after_s(self) -> float:
        if self._opened_at is None:
            return 1.0
        return max(1.0, self.config.cooldown_s - (self._clock() - self._opened_at))

    def can_try(self) -> bool:
        return self.state == "closed" or (self.state == "half_open" and not self._trial)

    def try_acquire(self) -> bool:
        """May a request go now? In half-open state only one trial goes at a time."""
        state = self.state
        if state == "closed":
            return True
        if state == "half_open" and not self._trial:
            self._trial = True
            return True
        return False

    def succeeded(self) -> None:
        self._failures, self._opened_at, self._trial = 0, None, False

    def failed(self) -> None:
        self._trial = False
        self._failures += 1
        if self._opened_at is not None or self._failures >= self.config.failures:
            self._opened_at = self._clock()

    def released(self) -> None:
        """A request ended without saying anything of the upstream's health (the client left first)."""
        self._trial = False

    def reset(self) -> None:
        self.succeeded()
