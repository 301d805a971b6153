"""The replicas of one model version: cold-starting (loading weights, warming up), warm standby (loaded,
idle) and serving. Every one of them is paid for, loading or not."""
from __future__ import annotations

from bisect import bisect_right, insort
from dataclasses import dataclass


@dataclass(slots=True)
class StartTimes:
    cold_s: float = 24.0  # new replica to first answer (scale_up.py: 12-24 s on 2 cores; the slow end)
    warm_s: float = 0.38  # standby replica to first answer (scale_up.py: 0.30-0.38 s)

    def __post_init__(self) -> None:
        if self.cold_s < 0 or self.warm_s < 0:
            raise ValueError("start times must be >= 0")


class Pool:
    def __init__(self, times: StartTimes, *, serving: int = 0, standby: int = 0):
        self.times = times
        self.loading: list[float] = []  # when each cold-starting replica will be loaded
        self.standby = standby  # loaded, not serving
        self.serving: list[float] = [0.0] * serving  # when each serving replica began (or begins) to serve, sorted
        self.want_serving = serving

    @property
    def size(self) -> int:
        """Replicas paid for."""
        return len(self.loading) + self.standby + len(self.serving)

    def scale(self, at: float, serving: int, standby: int) -> None:
        """Ask, at time `at`, for `serving` replicas taking traffic and `standby` loaded beside them."""
        self.want_serving = serving
        while len(self.serving) > serving:  # the newest stop serving; they stay loaded
            self.serving.pop()
            self.standby += 1
        while len(self.serving) < serving and self.standby:
            self.standby -= 1
            insort(self.serving, at + self.times.warm_s)
        missing = serving + standby - self.size
        if missing > 0:
            self.loading += [at + self.times.cold_s] * missing
        for _ in range(-missing):  # too many: cancel the latest loads first, then release standby
            if self.loading:
                self.loading.pop()
            elif self.standby > standby:
                self.standby -= 1
            else:
                break

    def advance(self, now: float, tick_s: float) -> None:
        """Replicas that finish loading before this tick ends serve from that moment if wanted, else wait."""
        if not self.loading or min(self.loading) >= now + tick_s:
            return
        ready = sorted(t for t in self.loading if t < now + tick_s)
        self.loading = [t for t in self.loading if t >= now + tick_s]
        for t in ready:
            if len(self.serving) < self.want_serving:
                insort(self.serving, t)
            else:
                self.standby += 1

    def capacity(self, now: float, tick_s: float) -> float:
        """Serving replicas over this tick, each counted for the share of the tick it served."""
        full = bisect_right(self.serving, now)  # serving since before the tick began
        end = now + tick_s
        return full + sum(max((end - t) / tick_s, 0.0) for t in self.serving[full:])
