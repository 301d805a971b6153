"""Counts in this process. Each operation runs without an await, so it is atomic on the event loop.

Bounded: expired windows are swept every `sweep_interval_s` (amortised over writes, no task), and
at `max_keys` the counters that expire soonest are evicted, so a flood of distinct tenants or keys
cannot grow it without bound. An evicted window forgets its count (it admits more, never fewer);
an evicted budget counter is seeded again from the ledger on its next use."""
from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass

from gateway.limits.storage import Outcome
from gateway.limits.strategy import Check


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    max_keys: int = 100_000
    sweep_interval_s: float = 10.0
    evict_to: float = 0.9  # at the cap, evict down to this share of it (amortises the work)

    def __post_init__(self) -> None:
        if self.max_keys < 1:
            raise ValueError(f"max_keys must be >= 1, got {self.max_keys}")
        if self.sweep_interval_s <= 0:
            raise ValueError(f"sweep_interval_s must be > 0, got {self.sweep_interval_s}")
        if not 0 < self.evict_to < 1:
            raise ValueError(f"evict_to must be in (0, 1), got {self.evict_to}")


class MemoryStorage:
    def __init__(self, clock=time.time, config: MemoryConfig = MemoryConfig()) -> None:
        self._counts: dict[str, tuple[int, float]] = {}  # key -> (count, expires_at)
        self._clock = clock
        self.config = config
        self._next_sweep = clock() + config.sweep_interval_s

    def __len__(self) -> int:
        return len(self._counts)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        self._counts.clear()

    def _get(self, key: str) -> int | None:
        entry = self._counts.get(key)
        if entry is None:
            return None
        if entry[1] <= self._clock():
            del self._counts[key]
            return None
        return entry[0]

    def _make_room(self, now: float, writing: list[str]) -> None:
        """Before writing `writing`: sweep when due; when full, evict the others that expire soonest."""
        new_keys = sum(k not in self._counts for k in writing)
        if now >= self._next_sweep or len(self._counts) + new_keys > self.config.max_keys:
            self._next_sweep = now + self.config.sweep_interval_s
            for key in [k for k, (_, expires) in self._counts.items() if expires <= now]:
                del self._counts[key]
        excess = len(self._counts) + new_keys - self.config.max_keys
        if excess > 0:
            keep = int(self.config.max_keys * self.config.evict_to)
            n = max(excess, len(self._counts) + new_keys - keep)
            others = (k for k in self._counts if k not in writing)
            for key in heapq.nsmallest(n, others, key=lambda k: self._counts[k][1]):
                del self._counts[key]

    async def reserve(self, checks: list[Check]) -> Outcome:
        used: list[float] = []
        granted: list[int] = []
        for i, c in enumerate(checks):
            first = self._get(c.keys[0])
            if first is None and c.must_exist:
                return Outcome(-1, i)
            u = sum((self._get(k) or 0) * w for k, w in zip(c.keys, c.weights))
            left = c.limit - u
            if left >= c.cost:
                g = c.cost
            elif c.min_cost < c.cost and left >= c.min_cost:
                g = math.floor(left)
            else:
                return Outcome(0, i, [*(math.ceil(x) for x in used), math.ceil(u)], [0] * (i + 1))
            used.append(u)
            granted.append(g)
        now = self._clock()
        self._make_room(now, [c.keys[0] for c in checks])
        for c, g in zip(checks, granted):
            count, expires = self._counts.get(c.keys[0], (0, now + c.ttl_s))
            self._counts[c.keys[0]] = (count + g, expires if c.must_exist else now + c.ttl_s)
        return Outcome(1, -1, [math.ceil(u + g) for u, g in zip(used, granted)], granted)

    async def adjust(self, deltas: list[tuple[str, int]]) -> None:
        for key, delta in deltas:
            if self._get(key) is not None:
                count, expires = self._counts[key]
                self._counts[key] = (count + delta, expires)

    async def seed(self, key: str, value: int, ttl_s: float) -> int:
        current = self._get(key)
        if current is not None:
            return current
        now = self._clock()
        self._make_room(now, [key])
        self._counts[key] = (value, now + ttl_s)
        return value

    async def overwrite(self, values: dict[str, int], ttl_s: float) -> None:
        now = self._clock()
        self._make_room(now, list(values))
        for key, value in values.items():
            self._counts[key] = (value, now + ttl_s)

    def forget(self, keys: list[str]) -> None:
        for key in keys:
            self._counts.pop(key, None)
