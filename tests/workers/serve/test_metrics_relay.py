"""The engines' metrics relay: snapshots per replica, summed at the gateway (the Ray path: test_ray_pool.py)."""
from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from workers.serve.metrics_relay import RETIRED, Hub, RelayedMetrics, merge, snapshot

M = "smollm2@fp32"


def replica_registry(tokens: int, running: int, ttfts: list[float]) -> CollectorRegistry:
    r = CollectorRegistry()
    Counter("tollgate:generation_tokens", "Generated tokens.", ["model_name"], registry=r).labels(M).inc(tokens)
    Gauge("tollgate:num_requests_running", "Running.", ["model_name"], registry=r).labels(M).set(running)
    h = Histogram("tollgate:time_to_first_token_seconds", "TTFT.", ["model_name"], buckets=(0.1, 1.0), registry=r)
    for t in ttfts:
        h.labels(M).observe(t)
    Counter("other_counter", "Not the engine's.", registry=r).inc()
    return r


def scrape(by_replica) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of a scrape of the merged snapshots, as Prometheus reads it."""
    r = CollectorRegistry()
    relay = RelayedMetrics()
    relay.update(by_replica)
    r.register(relay)
    text = generate_latest(r).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def test_snapshot_keeps_only_engine_series_without_created():
    samples = snapshot(replica_registry(5, 1, [0.05]))
    assert {s[0] for s in samples} == {"tollgate:generation_tokens", "tollgate:num_requests_running",
                                       "tollgate:time_to_first_token_seconds"}
    assert not any(s[3].endswith("_created") for s in samples)


def test_counters_and_histograms_sum_and_gauges_stay_per_replica():
    a = snapshot(replica_registry(5, 1, [0.05]))
    b = snapshot(replica_registry(7, 3, [0.5, 2.0]))
    got = scrape({"r1": a, "r2": b})
    assert got[("tollgate:generation_tokens_total", (("model_name", M),))] == 12
    ttft = (("model_name", M),)
    assert got[("tollgate:time_to_first_token_seconds_count", ttft)] == 3
    assert got[("tollgate:time_to_first_token_seconds_sum", ttft)] == 2.55
    assert got[("tollgate:time_to_first_token_seconds_bucket", (("le", "0.1"), ("model_name", M)))] == 1
    assert got[("tollgate:time_to_first_token_seconds_bucket", (("le", "1.0"), ("model_name", M)))] == 2
    assert got[("tollgate:time_to_first_token_seconds_bucket", (("le", "+Inf"), ("model_name", M)))] == 3
    assert got[("tollgate:num_requests_running", (("model_name", M), ("replica", "r1")))] == 1
    assert got[("tollgate:num_requests_running", (("model_name", M), ("replica", "r2")))] == 3
    assert ("tollgate:num_requests_running", (("model_name", M),)) not in got


def test_a_stopped_replica_keeps_its_counts_and_loses_its_gauges():
    hub = Hub(ttl_s=30)
    hub.put("r1", snapshot(replica_registry(5, 1, [0.05])))
    hub.put("r2", snapshot(replica_registry(7, 3, [0.5])))
    hub.retire("r1", snapshot(replica_registry(6, 0, [0.05])))  # its final values
    got = scrape(hub.collect())
    assert got[("tollgate:generation_tokens_total", (("model_name", M),))] == 13  # never goes backwards
    assert ("tollgate:num_requests_running", (("model_name", M), ("replica", "r1"))) not in got
    assert ("tollgate:num_requests_running", (("model_name", M), ("replica", RETIRED))) not in got
    assert got[("tollgate:num_requests_running", (("model_name", M), ("replica", "r2")))] == 3


def test_a_silent_replica_is_retired_after_ttl():
    hub = Hub(ttl_s=0.05)
    hub.put("r1", snapshot(replica_registry(5, 2, [])))
    time.sleep(0.1)
    hub.put("r2", snapshot(replica_registry(1, 1, [])))
    by_replica = hub.collect()
    assert set(by_replica) == {"r2", RETIRED}
    got = scrape(by_replica)
    assert got[("tollgate:generation_tokens_total", (("model_name", M),))] == 6
    assert got[("tollgate:num_requests_running", (("model_name", M), ("replica", "r2")))] == 1


def test_empty_hub_scrapes_nothing():
    assert merge({}) == [] and scrape({}) == {}
