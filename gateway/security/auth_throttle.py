"""Failed-key attempts throttled per client address, checked before any key lookup.

Guessing keys costs a hash and, for a key never seen, a database query; a client that keeps failing is
refused (429, Retry-After) until its window passes, without either. Keyed on the connecting address, never
on a client-sent header. Bounded: past `max_clients` the oldest address is forgotten."""
from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class AuthThrottleConfig:
    max_failures: int = 20  # failed attempts allowed per window
    window_s: float = 60.0
    max_clients: int = 10_000

    def __post_init__(self) -> None:
        if self.max_failures < 1 or self.window_s <= 0 or self.max_clients < 1:
            raise ValueError("max_failures and max_clients must be >= 1, window_s > 0")


class AuthThrottle:
    def __init__(self, config: AuthThrottleConfig | None = None, *, clock: Callable[[], float] = time.monotonic):
        self.config = config or AuthThrottleConfig()
        self._clock = clock
        self._failures: OrderedDict[str, tuple[int, float]] = OrderedDict()  # address -> (count, window start)

    def retry_after(self, address: str) -> float | None:
        """Seconds until `address` may try again, or None when it may try now."""
        entry = self._failures.get(address)
        if entry is None:
            return None
        count, start = entry
        left = start + self.config.window_s - self._clock()
        if left <= 0:
            del self._failures[address]
            return None
        return left if count >= self.config.max_failures else None

    def failed(self, address: str) -> None:
        now = self._clock()
        count, start = self._failures.pop(address, (0, now))
        if now - start >= self.config.window_s:
            count, start = 0, now
        self._failures[address] = (count + 1, start)  # most recent last
        while len(self._failures) > self.config.max_clients:
            self._failures.popitem(last=False)

    def succeeded(self, address: str) -> None:
        self._failures.pop(address, None)


def retry_after_header(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))
