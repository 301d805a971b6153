"""The policies over a short simulated period: fixed peak meets the SLO, the reactive rule at its stable
target settles where the shipped target swings, the forecast floor is causal, a seed fixes every figure,
and the command line prints the table and writes the chart."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from benchmarks.autoscale.autoscaler import AutoscalerConfig
from benchmarks.autoscale.forecast import reference_day, replica_floor
from benchmarks.autoscale.metrics import figures
from benchmarks.autoscale.policies import Autoscaled, FixedPeak
from benchmarks.autoscale.pool import StartTimes
from benchmarks.autoscale.replica import ReplicaModel
from benchmarks.autoscale.simulate import simulate
from benchmarks.autoscale.study import Setup, best, compare, evaluate, peak_replicas, settings_of, stable_target
from benchmarks.autoscale.traffic import Traffic, TrafficConfig, generate
from benchmarks.autoscale_sim import main

DAY = TrafficConfig(days=1, peak_rps=6.0)


def setup(traffic_cfg: TrafficConfig = DAY, seed: int = 0) -> Setup:
    s = Setup(traffic=generate(traffic_cfg, seed), mean_output_tokens=traffic_cfg.mean_output_tokens,
              model=ReplicaModel(), times=StartTimes(), shipped=AutoscalerConfig(), price_per_replica_hour=0.1,
              ttft_slo_s=2.0, max_standby=2)
    s.shipped = AutoscalerConfig(max=peak_replicas(s, s.shipped.target_ongoing_requests))
    return s


def test_fixed_peak_capacity_meets_the_slo():
    s = setup()
    n = peak_replicas(s, s.shipped.target_ongoing_requests)
    out = evaluate(s, "fixed peak", FixedPeak(n), settings_of(s.shipped))
    assert out.figures.slo_attainment == 1.0 and out.figures.ttft_p99_s < s.ttft_slo_s
    assert out.figures.replica_hours == n * 24


def steady(rps: float, hours: float = 2, tick_s: float = 10.0) -> Traffic:
    n = np.full(round(hours * 3600 / tick_s), round(rps * tick_s))
    return Traffic(tick_s=tick_s, rate=n / tick_s, arrivals=n, prompt_tokens=n * 36.0, output_tokens=n * 136.0)


def second_hour(target: int, rps: float = 20.0):
    """Ray's rule under two hours of steady load: (serving replicas, figures) over the second hour."""
    traffic, model = steady(rps), ReplicaModel()
    policy = Autoscaled(AutoscalerConfig(min=1, max=40, target_ongoing_requests=target), traffic.tick_s)
    run = simulate(policy, traffic, model, StartTimes())
    f = figures(run, traffic, price_per_replica_hour=1.0, ttft_slo_s=2.0)
    return run.serving[360:], f


def test_past_the_stability_bound_ray_swings_into_saturation_and_well_below_it_settles():
    model = ReplicaModel()
    bound = stable_target(model)
    assert bound == math.floor(model.step_a / model.step_b) == 6
    shipped, f_shipped = second_hour(16)
    assert shipped.max() - shipped.min() >= 10 and f_shipped.ttft_p99_s > 2.0  # as shipped: swings, queues
    settled, f_settled = second_hour(4)
    assert settled.max() - settled.min() <= 1 and f_settled.ttft_p99_s < 0.5
    at_bound, f_bound = second_hour(bound)  # may cycle, but never down to saturation
    load_tokens_s = 20.0 * 136
    assert at_bound.min() * model.throughput(model.max_num_seqs) > load_tokens_s and f_bound.ttft_p99_s < 2.0


def test_the_forecast_floor_uses_only_earlier_days_of_the_same_kind():
    assert reference_day(0) is None and reference_day(1) == 0
    assert reference_day(5) == 4  # the first Saturday: no weekend yet, the day before
    assert reference_day(6) == 5 and reference_day(7) == 4  # Sunday after Saturday, Monday after Friday
    traffic = generate(TrafficConfig(days=2, tick_s=60.0), 0)
    floor = replica_floor(traffic.output_tokens, traffic.tick_s, 300.0)
    per_hour = floor.reshape(2, 24, -1)
    assert per_hour[0, :23].max() == 0  # no history on day 0 (its last hour already sees day 1's first)
    assert per_hour[1].max() > 0 and per_hour[0, 23].max() > 0


def test_every_figure_is_fixed_by_the_seed():
    a = [o.figures for o in compare(setup(seed=3))]
    b = [o.figures for o in compare(setup(seed=3))]
    assert a == b


def test_the_best_policy_is_the_cheapest_that_meets_the_slo():
    s = setup()
    outcomes = compare(s)
    assert [o.policy for o in outcomes][:2] == ["fixed peak", "reactive (as shipped)"]
    assert outcomes[2].policy.startswith("reactive, target ")
    assert [o.policy for o in outcomes][3:] == ["warm pool", "predictive + warm pool"]
    chosen = best(s, outcomes)
    assert chosen is not None and chosen.meets(s)
    assert all(chosen.figures.cost <= o.figures.cost for o in outcomes if o.meets(s))
    assert outcomes[0].meets(s)


def test_a_warm_pool_absorbs_a_burst_the_reactive_rule_meets_cold():
    s = setup(replace(DAY, bursts_per_day=0, peak_rps=10.0))
    rate = s.traffic.rate.copy()
    burst = slice(13 * 360, 13 * 360 + 60)  # 13:00, ten minutes at 2.5x
    rate[burst] *= 2.5
    rng = np.random.default_rng(0)
    arrivals = rng.poisson(rate * s.traffic.tick_s)
    s.traffic = Traffic(tick_s=s.traffic.tick_s, rate=rate, arrivals=arrivals, prompt_tokens=arrivals * 36.0,
                        output_tokens=arrivals * 136.0)
    cfg = AutoscalerConfig(max=40, target_ongoing_requests=stable_target(s.model))
    cold = evaluate(s, "reactive", Autoscaled(cfg, s.traffic.tick_s), settings_of(cfg))
    warm = evaluate(s, "warm", Autoscaled(cfg, s.traffic.tick_s, standby=4), settings_of(cfg, 4))
    assert warm.figures.within_slo >= cold.figures.within_slo
    assert warm.figures.replica_hours > cold.figures.replica_hours


def test_the_command_line_prints_the_table_and_the_catalogue_block_and_writes_the_chart(tmp_path, capsys):
    out = tmp_path / "week.png"
    main(["--days", "1", "--peak-rps", "6", "--max-standby", "2", "--out", str(out)])
    printed = capsys.readouterr().out
    assert "| fixed peak |" in printed and "| predictive + warm pool |" in printed
    assert "replicas: {min:" in printed and "target_ongoing_requests:" in printed
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
