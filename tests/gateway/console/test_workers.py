"""The Workers page's engine figures: the engines' `tollgate:` series per version, summed over replicas."""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from gateway.console.workers import engine_figures


def test_engine_series_per_version_summed_over_replicas():
    r = CollectorRegistry()
    running = Gauge("tollgate:num_requests_running", "", ["model_name", "replica"], registry=r)
    running.labels("m@fp32", "a").set(3)
    running.labels("m@fp32", "b").set(2)
    running.labels("m@bf16", "a").set(1)
    Counter("tollgate:generation_tokens", "", ["model_name"], registry=r).labels("m@fp32").inc(40)
    Gauge("tollgate_inflight_generations", "", registry=r).set(9)  # the gateway's own: not an engine's
    figures = engine_figures(r)
    assert figures["m@fp32"]["num_requests_running"] == 5 and figures["m@bf16"]["num_requests_running"] == 1
    assert figures["m@fp32"]["generation_tokens_total"] == 40
    assert set(figures) == {"m@fp32", "m@bf16"}
