"""What each policy asks of the pool, tick by tick: replicas serving and replicas on warm standby."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmarks.autoscale.autoscaler import AutoscalerConfig, RayAutoscaler


@dataclass(slots=True)
class Decision:
    serving: int
    standby: int
    at: float  # when the request takes effect


class FixedPeak:
    """As many replicas as the week's peak needs, all the time."""

    def __init__(self, replicas: int):
        self.replicas = replicas

    def initial(self) -> tuple[int, int]:
        return self.replicas, 0

    def decide(self, now: float, ongoing: float) -> Decision:
        return Decision(self.replicas, 0, now)


class Autoscaled:
    """Ray Serve's reactive rule; with `standby`, that many loaded replicas kept beside the serving ones (a
    warm pool); with `schedule` (a replica floor per tick), the floor the forecast asks for."""

    def __init__(self, cfg: AutoscalerConfig, tick_s: float, *, standby: int = 0,
                 schedule: np.ndarray | None = None):
        self.cfg = cfg
        self.autoscaler = RayAutoscaler(cfg, tick_s)
        self.standby = standby
        self.schedule = None if schedule is None else [int(x) for x in schedule]
        self.tick_s = tick_s

    def initial(self) -> tuple[int, int]:
        floor = self._floor(0.0)
        if floor > self.autoscaler.target:
            self.autoscaler.target = min(floor, self.cfg.max)
        return self.autoscaler.target, self.standby

    def decide(self, now: float, ongoing: float) -> Decision:
        serving, at = self.autoscaler.update(now, ongoing, floor=self._floor(now))
        return Decision(serving, self.standby, at)

    def _floor(self, now: float) -> int:
        if self.schedule is None:
            return 0
        return self.schedule[min(int(now // self.tick_s), len(self.schedule) - 1)]
