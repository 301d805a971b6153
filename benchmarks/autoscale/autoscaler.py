"""Ray Serve's reactive rule, as Tollgate configures it (workers/serve/config.py autoscaling_config):
desired = ceil(ongoing requests averaged over the look-back window / target_ongoing_requests), bounded by
min and max; a change is applied only once it has been wanted for upscale_delay_s (up) or
downscale_delay_s (down) without interruption."""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from gateway.catalogue import Replicas

SHIPPED = Replicas()  # the catalogue's defaults: target 16, upscale 5 s, downscale 60 s


@dataclass(slots=True)
class AutoscalerConfig:
    min: int = 1
    max: int = 8
    target_ongoing_requests: float = SHIPPED.target_ongoing_requests
    upscale_delay_s: float = SHIPPED.upscale_delay_s
    downscale_delay_s: float = SHIPPED.downscale_delay_s
    look_back_s: float = 30.0  # Ray Serve's look_back_period_s default

    def __post_init__(self) -> None:
        if not 0 <= self.min <= self.max or self.max < 1:
            raise ValueError(f"need 0 <= min <= max and max >= 1, got min {self.min}, max {self.max}")
        if self.target_ongoing_requests <= 0:
            raise ValueError("target_ongoing_requests must be > 0")
        if min(self.upscale_delay_s, self.downscale_delay_s, self.look_back_s) < 0:
            raise ValueError("delays and look_back_s must be >= 0")


class RayAutoscaler:
    def __init__(self, cfg: AutoscalerConfig, tick_s: float):
        self.cfg = cfg
        self.tick_s = tick_s
        self.target = cfg.min
        self.window: deque[float] = deque(maxlen=max(1, round(cfg.look_back_s / tick_s)))
        self.window_sum = 0.0
        self.wanted_since: float | None = None  # when the current wish to change began
        self.wanted_up = False

    def desired(self, floor: int = 0) -> int:
        average = self.window_sum / len(self.window) if self.window else 0.0
        want = max(math.ceil(average / self.cfg.target_ongoing_requests - 1e-9), floor)
        return min(max(want, self.cfg.min), self.cfg.max)

    def update(self, now: float, ongoing: float, floor: int = 0) -> tuple[int, float]:
        """Record the ongoing requests seen at `now`; return the replica target and when it took effect
        (within the coming tick: a wish held for the whole delay fires at the moment the delay runs out).
        `floor` raises the bound `min` for this moment (a schedule)."""
        if len(self.window) == self.window.maxlen:
            self.window_sum -= self.window[0]
        self.window.append(ongoing)
        self.window_sum += ongoing
        want = self.desired(floor)
        if want == self.target:
            self.wanted_since = None
            return self.target, now
        up = want > self.target
        if self.wanted_since is None or up != self.wanted_up:
            self.wanted_since, self.wanted_up = now, up
        fires = self.wanted_since + (self.cfg.upscale_delay_s if up else self.cfg.downscale_delay_s)
        if fires < now + self.tick_s:
            self.target = want
            self.wanted_since = None
            return want, max(fires, now)
        return self.target, now
