"""Replica states: a cold start delays capacity by exactly the cold-start time, a standby replica by the warm
start, and every replica is paid for from the moment it is asked for."""
from __future__ import annotations

import pytest

from benchmarks.autoscale.pool import Pool, StartTimes


def capacity_over(pool: Pool, seconds: int, tick_s: float = 1.0) -> list[float]:
    out = []
    for i in range(round(seconds / tick_s)):
        pool.advance(i * tick_s, tick_s)
        out.append(pool.capacity(i * tick_s, tick_s))
    return out


def test_a_cold_start_delays_capacity_by_the_cold_start_time():
    pool = Pool(StartTimes(cold_s=24.0, warm_s=0.38))
    pool.scale(0.0, serving=1, standby=0)
    assert pool.size == 1  # paid for while it loads
    cap = capacity_over(pool, 40)
    assert cap[:24] == [0.0] * 24 and cap[24:] == [1.0] * 16
    assert sum(cap) == pytest.approx(40 - 24)


def test_a_cold_start_that_ends_mid_tick_counts_for_the_rest_of_the_tick():
    pool = Pool(StartTimes(cold_s=24.0))
    pool.scale(3.0, serving=1, standby=0)  # asked for 3 s into the first 10 s tick: ready at 27 s
    cap = capacity_over(pool, 40, tick_s=10.0)
    assert cap == pytest.approx([0.0, 0.0, 0.3, 1.0])


def test_a_standby_replica_serves_after_the_warm_start_and_a_new_one_refills_the_pool():
    times = StartTimes(cold_s=20.0, warm_s=0.5)
    pool = Pool(times, serving=1, standby=1)
    pool.scale(10.0, serving=2, standby=1)
    assert sorted(pool.serving) == [0.0, 10.5]
    assert pool.standby == 0 and pool.loading == [30.0] and pool.size == 3
    pool.advance(30.0, 1.0)
    assert pool.standby == 1 and not pool.loading


def test_scaling_down_cancels_loads_first_then_stops_the_newest_serving():
    pool = Pool(StartTimes(cold_s=20.0), serving=3)
    pool.scale(0.0, serving=5, standby=0)
    assert len(pool.loading) == 2
    pool.scale(1.0, serving=2, standby=0)
    assert pool.loading == [] and pool.standby == 0 and pool.serving == [0.0, 0.0] and pool.size == 2


def test_replicas_leaving_service_stay_loaded_when_standby_is_wanted():
    pool = Pool(StartTimes(), serving=4)
    pool.scale(0.0, serving=2, standby=1)
    assert len(pool.serving) == 2 and pool.standby == 1 and pool.size == 3
