"""What a run cost and how fast it answered: replica-hours, cost, TTFT per arrival tick, SLO attainment."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmarks.autoscale.simulate import Run
from benchmarks.autoscale.traffic import Traffic


def queue_wait(arrivals: np.ndarray, admitted: np.ndarray, tick_s: float) -> np.ndarray:
    """[ticks] the FIFO wait of each tick's middle request: from its arrival (mid-tick) until cumulative
    admissions reach its place in line (admissions spread evenly over their tick); inf if never admitted."""
    ticks = len(arrivals)
    place = np.cumsum(arrivals) - arrivals / 2
    done = np.concatenate([[0.0], np.cumsum(admitted)])  # admitted by the end of tick k - 1
    k = np.searchsorted(done, place - 1e-6, side="left")
    never = k > ticks
    k = np.clip(k, 1, ticks)
    lo, hi = done[k - 1], done[k]
    frac = np.divide(place - lo, hi - lo, out=np.ones(ticks), where=hi > lo)
    admit_t = (k - 1 + np.clip(frac, 0, 1)) * tick_s
    wait = np.maximum(admit_t - (np.arange(ticks) + 0.5) * tick_s, 0.0)
    wait[never] = np.inf
    return wait


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float, axis: int = -1) -> np.ndarray:
    """The q-quantile of values each counted `weights` times (0 where the weights are all 0)."""
    order = np.argsort(values, axis=axis)
    v = np.take_along_axis(values, order, axis=axis)
    cw = np.cumsum(np.take_along_axis(weights, order, axis=axis), axis=axis)
    total = cw.take([-1], axis=axis)
    idx = np.argmax(cw >= q * total - 1e-9, axis=axis)
    out = np.take_along_axis(v, np.expand_dims(idx, axis), axis=axis).squeeze(axis)
    return np.where(total.squeeze(axis) > 0, out, 0.0)


@dataclass(slots=True)
class Figures:
    replica_hours: float
    cost: float
    slo_attainment: float  # share of windows whose TTFT p99 is within the SLO
    within_slo: float  # share of requests whose TTFT is within the SLO
    ttft_p99_s: float
    tokens: float  # prompt + output tokens served
    peak_replicas: int

    @property
    def cost_per_million(self) -> float:
        return self.cost / self.tokens * 1e6 if self.tokens else float("nan")


def ttft(run: Run, traffic: Traffic) -> np.ndarray:
    return queue_wait(traffic.arrivals, run.served, run.tick_s) + run.service_ttft


def window_p99(ttft_s: np.ndarray, arrivals: np.ndarray, ticks_per_window: int) -> np.ndarray:
    m = len(ttft_s) // ticks_per_window * ticks_per_window
    shape = (-1, ticks_per_window)
    return weighted_quantile(ttft_s[:m].reshape(shape), arrivals[:m].reshape(shape).astype(float), 0.99)


def figures(run: Run, traffic: Traffic, *, price_per_replica_hour: float, ttft_slo_s: float,
            window_s: float = 300.0) -> Figures:
    t = ttft(run, traffic)
    w = traffic.arrivals.astype(float)
    per_window = window_p99(t, w, max(1, round(window_s / run.tick_s)))
    hours = float(run.replicas.sum()) * run.tick_s / 3600
    return Figures(
        replica_hours=hours, cost=hours * price_per_replica_hour,
        slo_attainment=float(np.mean(per_window <= ttft_slo_s)),
        within_slo=float(w[t <= ttft_slo_s].sum() / w.sum()) if w.sum() else 1.0,
        ttft_p99_s=float(weighted_quantile(t, w, 0.99)),
        tokens=float(traffic.prompt_tokens.sum() + traffic.output_tokens.sum()),
        peak_replicas=int(run.replicas.max()))
