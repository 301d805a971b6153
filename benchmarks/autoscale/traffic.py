"""A synthetic week of chat traffic: a Poisson arrival count per tick whose rate follows a diurnal curve
(daytime several times the night), a weekly one (weekdays several times weekends) and random bursts; each
tick's prompt and output tokens are the sums of per-request counts drawn like the engine benchmark's."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DAY_S = 86_400
WEEKEND = (5, 6)  # the week starts on a Monday at 00:00


@dataclass(slots=True)
class TrafficConfig:
    days: float = 7.0
    tick_s: float = 10.0
    peak_rps: float = 20.0  # a weekday's daytime plateau, before bursts
    day_night: tuple[float, float] = (6.0, 8.5)  # each day's daytime / night ratio, drawn in this range
    weekday_weekend: tuple[float, float] = (2.2, 2.7)  # the week's weekday / weekend ratio, drawn once
    bursts_per_day: float = 3.0  # Poisson mean; each burst multiplies the rate for a while
    burst_multiplier: tuple[float, float] = (1.5, 2.5)
    burst_minutes: tuple[float, float] = (5.0, 30.0)
    burst_ramp_s: float = 60.0  # from the base rate to the burst's rate, linearly
    # engine_throughput.py's workload: its 32 chat-templated questions are 34-39 prompt tokens (SmolLM2's
    # tokenizer), its outputs uniform in 16..256 tokens.
    prompt_tokens: tuple[int, int] = (34, 39)
    output_tokens: tuple[int, int] = (16, 256)

    def __post_init__(self) -> None:
        if self.days <= 0 or self.tick_s <= 0 or self.peak_rps <= 0:
            raise ValueError("days, tick_s and peak_rps must be > 0")
        for name in ("day_night", "weekday_weekend", "burst_multiplier", "burst_minutes",
                     "prompt_tokens", "output_tokens"):
            lo, hi = getattr(self, name)
            if not 0 < lo <= hi:
                raise ValueError(f"{name} must be a range 0 < low <= high, got {(lo, hi)}")
        if self.bursts_per_day < 0 or self.burst_ramp_s < 0:
            raise ValueError("bursts_per_day and burst_ramp_s must be >= 0")

    @property
    def mean_output_tokens(self) -> float:
        return sum(self.output_tokens) / 2

    @property
    def mean_prompt_tokens(self) -> float:
        return sum(self.prompt_tokens) / 2


@dataclass(slots=True)
class Traffic:
    tick_s: float
    rate: np.ndarray  # [ticks] expected requests/s (the curve, bursts included)
    arrivals: np.ndarray  # [ticks] requests arriving in each tick
    prompt_tokens: np.ndarray  # [ticks] their prompt tokens, summed
    output_tokens: np.ndarray  # [ticks] their output tokens, summed

    @property
    def ticks(self) -> int:
        return len(self.rate)

    def times(self) -> np.ndarray:
        """Each tick's start, in seconds from Monday 00:00."""
        return np.arange(self.ticks) * self.tick_s


def diurnal(hour: np.ndarray, day_night: np.ndarray) -> np.ndarray:
    """1.0 on the daytime plateau (about 08:30-19:00), 1/day_night at night, smooth ramps between."""
    up = 1 / (1 + np.exp(-(hour - 7.5) / 0.6))
    down = 1 / (1 + np.exp(-(20.0 - hour) / 0.8))
    night = 1 / day_night
    return night + (1 - night) * up * down


def rate_curve(cfg: TrafficConfig, rng: np.random.Generator) -> np.ndarray:
    """Expected requests/s per tick."""
    t = np.arange(round(cfg.days * DAY_S / cfg.tick_s)) * cfg.tick_s
    day = (t // DAY_S).astype(int)
    n_days = int(day[-1]) + 1
    ratios = rng.uniform(*cfg.day_night, size=n_days)
    weekend = rng.uniform(*cfg.weekday_weekend)
    weekly = np.where(np.isin(day % 7, WEEKEND), 1 / weekend, 1.0)
    rate = cfg.peak_rps * weekly * diurnal((t % DAY_S) / 3600, ratios[day])
    return rate * bursts(cfg, t, rng)


def bursts(cfg: TrafficConfig, t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A multiplier per tick: 1, or a burst's factor (ramped in and out over burst_ramp_s)."""
    factor = np.ones_like(t, dtype=float)
    for _ in range(rng.poisson(cfg.bursts_per_day * cfg.days)):
        start = rng.uniform(0, t[-1])
        length = rng.uniform(*cfg.burst_minutes) * 60
        peak = rng.uniform(*cfg.burst_multiplier)
        ramp = max(cfg.burst_ramp_s, 1e-9)
        # a trapezoid: 0 before start, up to 1 over the ramp, 1 until the end, down over the ramp
        shape = np.clip(np.minimum((t - start) / ramp, (start + length + ramp - t) / ramp), 0, 1)
        factor = np.maximum(factor, 1 + (peak - 1) * shape)
    return factor


def token_sums(arrivals: np.ndarray, lo: int, hi: int, rng: np.random.Generator) -> np.ndarray:
    """[ticks] the summed token counts of each tick's requests, each uniform in lo..hi. Drawn as the sum's
    normal law (mean k*m, variance k*v) rather than request by request: a week is millions of requests."""
    mean, var = (lo + hi) / 2, ((hi - lo + 1) ** 2 - 1) / 12
    k = arrivals.astype(float)
    return np.clip(np.rint(rng.normal(k * mean, np.sqrt(k * var))), k * lo, k * hi)


def generate(cfg: TrafficConfig, seed: int = 0) -> Traffic:
    rng = np.random.default_rng(seed)
    rate = rate_curve(cfg, rng)
    arrivals = rng.poisson(rate * cfg.tick_s)
    return Traffic(tick_s=cfg.tick_s, rate=rate, arrivals=arrivals,
                   prompt_tokens=token_sums(arrivals, *cfg.prompt_tokens, rng),
                   output_tokens=token_sums(arrivals, *cfg.output_tokens, rng))
