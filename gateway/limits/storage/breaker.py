"""A circuit breaker for the shared store: once it is failing, stop asking it for a while.

    closed --(N failures in a row, or one timeout)--> open --(cool-down)--> half-open
    half-open --(the one probe succeeds)--> closed;  --(it fails)--> open again

Only the probe closes it: a call that started before it opened and happens to succeed proves nothing.

A timeout opens it at once: a hung server costs each caller the whole timeout, so waiting
for N of them would cost N timeouts. Plain state, no I/O: the caller runs the probe."""
from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass


class State(enum.Enum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(frozen=True, slots=True)
class BreakerConfig:
    failures: int = 3  # consecutive errors that open it
    cooldown_s: float = 2.0  # open this long before one probe may try again

    def __post_init__(self) -> None:
        if self.failures < 1:
            raise ValueError(f"failures must be >= 1, got {self.failures}")
        if self.cooldown_s <= 0:
            raise ValueError(f"cooldown_s must be > 0, got {self.cooldown_s}")


class CircuitBreaker:
    def __init__(self, config: BreakerConfig = BreakerConfig(), *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self.state = State.CLOSED
        self._failures = 0
        self._opened_at = 0.0

    def allow(self) -> bool:
        """May a caller use the store now? Only while closed; the half-open probe goes by `try_probe`."""
        return self.state is State.CLOSED

    def try_probe(self) -> bool:
        """True for exactly one caller once the cool-down is over: it must report the probe's outcome."""
        if self.state is State.OPEN and self._clock() - self._opened_at >= self.config.cooldown_s:
            self.state = State.HALF_OPEN
            return True
        return False

    def success(self) -> None:
        """A call went through: the failures in a row start over. Only the probe closes an open breaker."""
        if self.state is State.CLOSED:
            self._failures = 0

    def failure(self, *, timeout: bool = False) -> None:
        if self.state is not State.CLOSED:
            return  # a call that started before it opened: the cool-down already runs
        self._failures += 1
        if timeout or self._failures >= self.config.failures:
            self._open()

    def probed(self, ok: bool) -> None:
        """The outcome of the probe `try_probe` granted: close, or wait another cool-down."""
        if self.state is not State.HALF_OPEN:
            raise RuntimeError(f"no probe in flight (the breaker is {self.state.value})")
        if ok:
            self.state, self._failures = State.CLOSED, 0
        else:
            self._open()

    def _open(self) -> None:
        self.state, self._opened_at = State.OPEN, self._clock()

    def retry_after_s(self) -> float:
        """How long until a probe may close it (0 while closed)."""
        if self.state is State.CLOSED:
            return 0.0
        return max(0.0, self._opened_at + self.config.cooldown_s - self._clock())
