"""Reserved throughput: a token bucket per tenant, refilled at the tenant's reserved rate by wall time.

A tenant reserved at R output tokens/s holds a bucket of at most `burst` tokens (R x burst_s, and never less
than min_burst, so a small rate can still cover a whole step's token). While the bucket holds a whole token the
tenant's work is *entitled*: the scheduler admits and runs it ahead of best-effort work. Each step's generated
tokens are taken from the bucket as far as it reaches ("covered": served under the reservation); the rest of a
step's tokens are best-effort, as any other tenant's. So the reservation guarantees R, and what it leaves
unused (an idle or light reserved tenant) stays with everyone else.

A tenant whose work has all left keeps its bucket until it would have refilled: a tenant that sends its next
request as the last one ends does not get a fresh burst. Buckets that are full again are forgotten (on the next
new tenant's arrival), so memory is bounded by recent reserved tenants. Tenants are opaque keys (the gateway's
per-tenant HMAC).
"""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class _Bucket:
    level: float
    stamp: float
    rate: float


class Reservations:
    def __init__(self, *, burst_s: float = 1.0, min_burst: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if burst_s <= 0 or min_burst < 1:
            raise ValueError("burst_s must be > 0 and min_burst >= 1")
        self.burst_s, self.min_burst, self._clock = burst_s, min_burst, clock
        self._buckets: dict[str | None, _Bucket] = {}
        self._live: Counter[str | None] = Counter()  # unfinished reserved sequences per tenant

    def burst(self, rate: float) -> float:
        return max(rate * self.burst_s, self.min_burst)

    def arrive(self, tenant: str | None, rate: float) -> None:
        if rate <= 0:
            return
        if tenant not in self._buckets:
            self._forget_refilled()
            self._buckets[tenant] = _Bucket(self.burst(rate), self._clock(), rate)
        self._buckets[tenant].rate = rate
        self._live[tenant] += 1

    def leave(self, tenant: str | None, rate: float) -> None:
        if rate <= 0 or not self._live[tenant]:
            return
        self._live[tenant] -= 1
        if self._live[tenant] <= 0:
            del self._live[tenant]

    def _forget_refilled(self) -> None:
        now = self._clock()
        for tenant in [t for t, b in self._buckets.items()
                       if t not in self._live and b.level + b.rate * (now - b.stamp) >= self.burst(b.rate)]:
            del self._buckets[tenant]

    def available(self, tenant: str | None, rate: float) -> float:
        """Tokens in the tenant's bucket now (0 without a reservation)."""
        bucket = self._buckets.get(tenant)
        if rate <= 0 or bucket is None:
            return 0.0
        now = self._clock()
        bucket.level = min(self.burst(rate), bucket.level + rate * (now - bucket.stamp))
        bucket.stamp = now
        return bucket.level

    def entitled(self, tenant: str | None, rate: float) -> bool:
        return self.available(tenant, rate) >= 1

    def take(self, tenant: str | None, rate: float, tokens: int) -> int:
        """Of `tokens` just generated for the tenant, how many the reservation covers (taken from its bucket)."""
        covered = min(tokens, int(self.available(tenant, rate)))
        if covered > 0:
            self._buckets[tenant].level -= covered
        return max(covered, 0)

    def __len__(self) -> int:
        return len(self._buckets)
