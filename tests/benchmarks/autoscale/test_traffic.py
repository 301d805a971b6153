"""The synthetic week: its day/night and weekday/weekend ratios fall in the issue's ranges, bursts included,
and a seed fixes it."""
from __future__ import annotations

import numpy as np
import pytest

from benchmarks.autoscale.traffic import DAY_S, TrafficConfig, diurnal, generate, token_sums

WEEK = TrafficConfig(tick_s=60.0)  # minute ticks: the same curve, fewer ticks


def per_day_hours(values: np.ndarray, tick_s: float) -> np.ndarray:
    """[days, 24] mean per tick in each hour."""
    per_hour = round(3600 / tick_s)
    return values.reshape(-1, 24, per_hour).mean(axis=2)


@pytest.mark.parametrize("seed", range(4))
def test_daytime_is_5_to_10_times_the_night_on_every_day(seed):
    traffic = generate(WEEK, seed)
    hours = per_day_hours(traffic.arrivals.astype(float), WEEK.tick_s)
    ratio = hours[:, 10:18].mean(axis=1) / hours[:, 0:5].mean(axis=1)
    assert np.all((ratio >= 5) & (ratio <= 10)), ratio


@pytest.mark.parametrize("seed", range(4))
def test_weekdays_carry_2_to_3_times_the_weekend(seed):
    traffic = generate(WEEK, seed)
    daily = traffic.arrivals.reshape(7, -1).sum(axis=1)
    ratio = daily[:5].mean() / daily[5:].mean()
    assert 2 <= ratio <= 3, ratio


def test_bursts_raise_the_rate_above_the_curve_and_only_for_minutes():
    cfg = TrafficConfig(tick_s=60.0, bursts_per_day=3)
    calm = generate(TrafficConfig(tick_s=60.0, bursts_per_day=0), 1)
    bursty = generate(cfg, 1)
    lifted = bursty.rate > calm.rate * 1.2
    assert lifted.any()
    assert lifted.mean() < 0.1  # 3 bursts of <= 30 minutes a day
    assert bursty.rate.max() <= calm.rate.max() * cfg.burst_multiplier[1] + 1e-9


def test_tokens_follow_the_engine_benchmark_workload():
    traffic = generate(TrafficConfig(days=1, tick_s=60.0, peak_rps=2.0), 0)
    n = traffic.arrivals.sum()
    assert 34 <= traffic.prompt_tokens.sum() / n <= 39
    assert abs(traffic.output_tokens.sum() / n - 136) < 5  # uniform 16..256


def test_a_seed_fixes_the_week_and_another_seed_changes_it():
    a, b, c = generate(WEEK, 7), generate(WEEK, 7), generate(WEEK, 8)
    assert np.array_equal(a.arrivals, b.arrivals) and np.array_equal(a.output_tokens, b.output_tokens)
    assert not np.array_equal(a.arrivals, c.arrivals)


def test_the_diurnal_curve_runs_from_the_night_floor_to_the_plateau():
    hours = np.arange(0, 24, 0.25)
    curve = diurnal(hours, np.full_like(hours, 8.0))
    assert curve.min() == pytest.approx(1 / 8, rel=0.02) and curve.max() == pytest.approx(1.0, rel=0.02)
    assert curve[hours == 3].item() < 0.15 and curve[hours == 13].item() > 0.98


def test_bad_ranges_are_refused():
    with pytest.raises(ValueError):
        TrafficConfig(day_night=(9, 5))
    with pytest.raises(ValueError):
        TrafficConfig(peak_rps=0)
    assert DAY_S == 86_400


def test_token_sums_stay_within_their_bounds_and_average_right():
    rng = np.random.default_rng(0)
    k = np.array([0, 1, 5, 200] * 500)
    sums = token_sums(k, 16, 256, rng)
    assert np.all(sums >= 16 * k) and np.all(sums <= 256 * k) and np.all(sums[k == 0] == 0)
    assert sums[k == 200].mean() / 200 == pytest.approx(136, rel=0.01)
