"""The comparison: each policy over the same week, the warm pools sized by a sweep, the best one chosen."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from benchmarks.autoscale.autoscaler import AutoscalerConfig
from benchmarks.autoscale.forecast import replica_floor
from benchmarks.autoscale.metrics import Figures, figures
from benchmarks.autoscale.policies import Autoscaled, FixedPeak
from benchmarks.autoscale.pool import StartTimes
from benchmarks.autoscale.replica import ReplicaModel
from benchmarks.autoscale.simulate import Run, simulate
from benchmarks.autoscale.traffic import Traffic


@dataclass(slots=True)
class Setup:
    traffic: Traffic
    mean_output_tokens: float
    model: ReplicaModel
    times: StartTimes
    shipped: AutoscalerConfig  # the catalogue's autoscaler settings; max sized to this traffic
    price_per_replica_hour: float
    ttft_slo_s: float
    slo_target: float = 0.99  # share of windows whose TTFT p99 must be within the SLO
    window_s: float = 300.0
    max_standby: int = 4


@dataclass(slots=True)
class Outcome:
    policy: str
    settings: dict  # the catalogue's replicas: fields this policy ran with
    figures: Figures
    run: Run

    def meets(self, setup: Setup) -> bool:
        return self.figures.slo_attainment >= setup.slo_target


def stable_target(model: ReplicaModel) -> int:
    """The largest target_ongoing_requests at which Ray's rule can settle at all.

    Ray scales to R' = R * ongoing(R) / target. A replica's batch at token rate y is n = y*a / (1 - y*b): the
    busier a replica, the longer each request stays, so ongoing requests grow faster than load. At the
    equilibrium (n = target) that gives dR'/dR = -target * b / a: past a / b each correction overshoots by more
    than the error it corrects, and the pool swings between saturation and the overshoot it causes. Near the
    bound it can still cycle under large swings of load (cold starts lag the rule); well below it settles."""
    return max(1, math.floor(model.step_a / model.step_b))


def peak_replicas(setup: Setup, target: float) -> int:
    """Replicas for the week's highest rate (bursts included), each at the given batch."""
    peak_tokens_s = float(setup.traffic.rate.max()) * setup.mean_output_tokens
    return math.ceil(peak_tokens_s / setup.model.throughput(target))


def evaluate(setup: Setup, name: str, policy, settings: dict) -> Outcome:
    run = simulate(policy, setup.traffic, setup.model, setup.times)
    fig = figures(run, setup.traffic, price_per_replica_hour=setup.price_per_replica_hour,
                  ttft_slo_s=setup.ttft_slo_s, window_s=setup.window_s)
    return Outcome(name, settings, fig, run)


def settings_of(cfg: AutoscalerConfig, standby: int = 0) -> dict:
    return {"min": cfg.min, "max": cfg.max, "standby": standby,
            "target_ongoing_requests": cfg.target_ongoing_requests,
            "upscale_delay_s": cfg.upscale_delay_s, "downscale_delay_s": cfg.downscale_delay_s}


def smallest_pool(setup: Setup, name: str, cfg: AutoscalerConfig, schedule=None) -> Outcome:
    """The warm pool with the fewest standby replicas (1..max_standby) that meets the SLO target, else the
    one that came closest."""
    tried = []
    for standby in range(1, setup.max_standby + 1):
        policy = Autoscaled(cfg, setup.traffic.tick_s, standby=standby, schedule=schedule)
        out = evaluate(setup, name, policy, settings_of(cfg, standby))
        if out.meets(setup):
            return out
        tried.append(out)
    return max(tried, key=lambda o: o.figures.slo_attainment)


def tuned_reactive(setup: Setup) -> Outcome:
    """Ray's rule at the largest target up to stable_target that meets the SLO target (a larger target packs
    more requests per replica, so it is the cheapest that works), else at 1."""
    tick = setup.traffic.tick_s
    out = None
    for target in range(stable_target(setup.model), 0, -1):
        cfg = replace(setup.shipped, target_ongoing_requests=target)
        out = evaluate(setup, f"reactive, target {target}", Autoscaled(cfg, tick), settings_of(cfg))
        if out.meets(setup):
            break
    return out


def compare(setup: Setup) -> list[Outcome]:
    shipped, tick = setup.shipped, setup.traffic.tick_s
    fixed = peak_replicas(setup, shipped.target_ongoing_requests)
    reactive = tuned_reactive(setup)
    tuned = replace(shipped, target_ongoing_requests=reactive.settings["target_ongoing_requests"])
    schedule = replica_floor(setup.traffic.output_tokens, tick, setup.model.throughput(tuned.target_ongoing_requests))
    return [
        evaluate(setup, "fixed peak", FixedPeak(fixed), {**settings_of(shipped), "min": fixed, "max": fixed}),
        evaluate(setup, "reactive (as shipped)", Autoscaled(shipped, tick), settings_of(shipped)),
        reactive,
        smallest_pool(setup, "warm pool", tuned),
        smallest_pool(setup, "predictive + warm pool", tuned, schedule),
    ]


def best(setup: Setup, outcomes: list[Outcome]) -> Outcome | None:
    """The cheapest policy that meets the SLO target."""
    meeting = [o for o in outcomes if o.meets(setup)]
    return min(meeting, key=lambda o: o.figures.cost) if meeting else None
