"""Replica-hours, cost and cost per token are plain arithmetic over the run; queue waits come from the
cumulative arrival and admission curves; p99s are weighted by requests."""
from __future__ import annotations

import numpy as np
import pytest

from benchmarks.autoscale.metrics import figures, queue_wait, weighted_quantile
from benchmarks.autoscale.pool import StartTimes
from benchmarks.autoscale.policies import FixedPeak
from benchmarks.autoscale.replica import ReplicaModel
from benchmarks.autoscale.simulate import simulate
from benchmarks.autoscale.traffic import Traffic


def flat_traffic(ticks: int, per_tick: int, tick_s: float = 10.0) -> Traffic:
    n = np.full(ticks, per_tick)
    return Traffic(tick_s=tick_s, rate=n / tick_s, arrivals=n, prompt_tokens=n * 36.0, output_tokens=n * 136.0)


def test_replica_hours_cost_and_cost_per_million_tokens():
    traffic = flat_traffic(ticks=360 * 24, per_tick=5)  # a day
    run = simulate(FixedPeak(3), traffic, ReplicaModel(), StartTimes())
    f = figures(run, traffic, price_per_replica_hour=0.5, ttft_slo_s=2.0)
    assert f.replica_hours == pytest.approx(72.0)
    assert f.cost == pytest.approx(36.0)
    tokens = 360 * 24 * 5 * (36 + 136)
    assert f.tokens == tokens
    assert f.cost_per_million == pytest.approx(36.0 / tokens * 1e6)
    assert f.slo_attainment == 1.0 and f.ttft_p99_s < 0.2


def test_an_undersized_pool_queues_and_misses_the_slo():
    traffic = flat_traffic(ticks=360, per_tick=100)  # 10 req/s * 136 tokens: needs ~3 replicas
    run = simulate(FixedPeak(1), traffic, ReplicaModel(), StartTimes())
    f = figures(run, traffic, price_per_replica_hour=1.0, ttft_slo_s=2.0)
    assert f.slo_attainment < 0.1 and f.ttft_p99_s > 60


def test_queue_wait_from_the_cumulative_curves():
    # 10 requests arrive in tick 0 and get in during tick 2: the middle one waited from 5 s to 25 s
    wait = queue_wait(np.array([10, 0, 0]), np.array([0.0, 0.0, 10.0]), tick_s=10.0)
    assert wait[0] == pytest.approx(20.0)
    assert queue_wait(np.array([4, 4]), np.array([4.0, 4.0]), 10.0) == pytest.approx([0.0, 0.0])
    assert np.isinf(queue_wait(np.array([4]), np.array([0.0]), 10.0)[0])  # never admitted


def test_weighted_quantile_counts_requests_not_ticks():
    values = np.array([0.1, 5.0])
    assert weighted_quantile(values, np.array([999.0, 1.0]), 0.99) == pytest.approx(0.1)
    assert weighted_quantile(values, np.array([98.0, 2.0]), 0.99) == pytest.approx(5.0)
    rows = weighted_quantile(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 0.0], [0.0, 0.0]]), 0.99)
    assert rows.tolist() == [1.0, 0.0]  # a window without requests reads 0
