"""Per-version outcomes over a sliding time window: plain data, the clock passed in."""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Outcome:
    at: float
    ok: bool
    ttft_s: float | None
    latency_s: float


@dataclass(frozen=True, slots=True)
class WindowStats:
    requests: int
    errors: int
    ttft_p50_s: float | None
    ttft_p99_s: float | None
    latency_p50_s: float | None
    latency_p99_s: float | None

    @property
    def error_rate(self) -> float:
        return self.errors / self.requests if self.requests else 0.0

    def to_dict(self) -> dict:
        return {"requests": self.requests, "errors": self.errors, "error_rate": self.error_rate,
                "ttft_p50_s": self.ttft_p50_s, "ttft_p99_s": self.ttft_p99_s,
                "latency_p50_s": self.latency_p50_s, "latency_p99_s": self.latency_p99_s}


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in [0, 100]); None when there is nothing to rank."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


class SlidingWindow:
    """The outcomes of the last `window_s` seconds (at most `max_samples` of them)."""

    def __init__(self, window_s: float, max_samples: int = 10_000) -> None:
        if window_s <= 0:
            raise ValueError(f"window_s must be > 0, got {window_s}")
        self.window_s = window_s
        self._items: deque[Outcome] = deque(maxlen=max_samples)

    def add(self, outcome: Outcome) -> None:
        self._items.append(outcome)
        self._expire(outcome.at)

    def stats(self, now: float) -> WindowStats:
        self._expire(now)
        items = list(self._items)
        ttfts = [o.ttft_s for o in items if o.ttft_s is not None]
        lats = [o.latency_s for o in items]
        return WindowStats(len(items), sum(not o.ok for o in items),
                           percentile(ttfts, 50), percentile(ttfts, 99),
                           percentile(lats, 50), percentile(lats, 99))

    def clear(self) -> None:
        self._items.clear()

    def _expire(self, now: float) -> None:
        while self._items and self._items[0].at < now - self.window_s:
            self._items.popleft()
