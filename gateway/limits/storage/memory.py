"""Counts in this process. Each operation runs without an await, so it is atomic on the event loop."""
from __future__ import annotations

import math
import time

from gateway.limits.storage import Outcome
from gateway.limits.strategy import Check


class MemoryStorage:
    def __init__(self, clock=time.time) -> None:
        self._counts: dict[str, tuple[int, float]] = {}  # key -> (count, expires_at)
        self._clock = clock

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

    async def reserve(self, checks: list[Check]) -> Outcome:
        used, granted = [], []
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
                return Outcome(0, i, [*(math.floor(x) for x in used), math.floor(u)], [0] * (i + 1))
            used.append(u)
            granted.append(g)
        now = self._clock()
        for c, g in zip(checks, granted):
            count, expires = self._counts.get(c.keys[0], (0, now + c.ttl_s))
            self._counts[c.keys[0]] = (count + g, expires if c.must_exist else now + c.ttl_s)
        return Outcome(1, -1, [math.floor(u + g) for u, g in zip(used, granted)], granted)

    async def adjust(self, deltas: list[tuple[str, int]]) -> None:
        for key, delta in deltas:
            if self._get(key) is not None:
                count, expires = self._counts[key]
                self._counts[key] = (count + delta, expires)

    async def seed(self, key: str, value: int, ttl_s: float) -> int:
        current = self._get(key)
        if current is not None:
            return current
        self._counts[key] = (value, self._clock() + ttl_s)
        return value
