"""Per-tenant Prometheus series are the operator's opt-in: by default no series names a tenant."""
from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter

from gateway.observability.metrics import Metrics
from gateway.observability.tenant_series import TenantLabelled


def record(m: Metrics) -> str:
    for tenant in ("tenant-a", "tenant-b", "tenant-c"):
        m.record_usage(tenant, "chat", prompt=3, completion=2, cached=1, cost=0.25)
        m.requests.labels(tenant, "chat", "/v1/chat/completions", "200").inc()
        m.rejections.labels(tenant, "rate_limit_exceeded").inc()
    return m.render().decode()


def test_by_default_no_series_names_a_tenant_and_counts_sum_over_tenants():
    m = Metrics()
    text = record(m)
    assert "tenant-a" not in text and "tenant=" not in text
    sample = m.registry.get_sample_value
    assert sample("tollgate_tokens_total", {"model": "chat", "kind": "prompt"}) == 9
    assert sample("tollgate_cost_total", {"model": "chat"}) == pytest.approx(0.75)
    assert sample("tollgate_requests_total", {"model": "chat", "endpoint": "/v1/chat/completions",
                                              "status": "200"}) == 3
    assert sample("tollgate_limiter_rejections_total", {"reason": "rate_limit_exceeded"}) == 3


def test_per_tenant_series_when_the_operator_opts_in():
    m = Metrics(per_tenant=True)
    text = record(m)
    assert 'tenant="tenant-b"' in text
    sample = m.registry.get_sample_value
    assert sample("tollgate_tokens_total", {"tenant": "tenant-a", "model": "chat", "kind": "cached"}) == 1
    assert sample("tollgate_cost_total", {"tenant": "tenant-c", "model": "chat"}) == pytest.approx(0.25)


@pytest.mark.parametrize("per_tenant", [False, True])
def test_labels_by_name_work_either_way(per_tenant):
    series = TenantLabelled(Counter, "x_total", "x", ["model"], per_tenant=per_tenant, registry=CollectorRegistry())
    series.labels(tenant="t1", model="m").inc()
    series.labels("t1", "m").inc()
    labels = {"tenant": "t1", "model": "m"} if per_tenant else {"model": "m"}
    assert series.metric.collect()[0].samples[0].labels == labels
    assert series.metric.collect()[0].samples[0].value == 2


def test_the_tenant_label_is_not_named_by_callers():
    with pytest.raises(ValueError, match="tenant"):
        TenantLabelled(Counter, "y_total", "y", ["tenant", "model"], per_tenant=True, registry=CollectorRegistry())
