"""How long to wait before trying again: exponential, capped, jittered. One rule for every retry in the gateway
(reconnecting to Redis, re-sending a webhook, re-writing a ledger batch), so each reads the same way.

Written here rather than taken from `tenacity` or `redis.backoff`: the webhook worker stores the delay as a
timestamp in the database instead of sleeping on it (tenacity only wraps calls), tests need a seeded `rand`
(redis' backoffs draw from the global one), and the bottom layer should not import a Redis client."""
from __future__ import annotations

import random
from dataclasses import dataclass

_MAX_DOUBLINGS = 64  # 2**64 x any sane initial_s is past every cap; keeps the float finite


@dataclass(frozen=True, slots=True)
class Backoff:
    """Retry `n` (0-based) waits initial_s * 2**n, at most max_s, scaled by a random factor in `jitter`
    ((low, high); (1, 1): exact). A factor range below 1, such as (0.5, 1), keeps every wait under max_s."""

    initial_s: float
    max_s: float = float("inf")
    jitter: tuple[float, float] = (1.0, 1.0)

    def __post_init__(self) -> None:
        if not self.initial_s >= 0 or not self.max_s >= self.initial_s:
            raise ValueError(f"need 0 <= initial_s <= max_s, got initial_s={self.initial_s}, max_s={self.max_s}")
        low, high = self.jitter
        if not 0 <= low <= high:
            raise ValueError(f"jitter must be (low, high) with 0 <= low <= high, got {self.jitter}")

    def delay_s(self, retry: int, rand: random.Random | None = None) -> float:
        """The wait before retry `retry` (0: the first retry)."""
        base = min(self.initial_s * 2.0 ** min(max(retry, 0), _MAX_DOUBLINGS), self.max_s)
        low, high = self.jitter
        return base * (low if low == high else (rand or random).uniform(low, high))
