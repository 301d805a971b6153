"""Prometheus series with a tenant label that callers always pass and an operator opts into.

Whoever scrapes /metrics would otherwise read every tenant's id, traffic and spend, and one
series per tenant grows without bound. By default the tenant label is dropped, so each series
sums over tenants; Settings.metrics_per_tenant keeps it. Callers' code is the same either way."""
from __future__ import annotations

from prometheus_client import CollectorRegistry

TENANT = "tenant"


class TenantLabelled:
    """A Counter, Gauge or Histogram whose first label is the tenant (kept only when `per_tenant`)."""

    def __init__(self, kind: type, name: str, documentation: str, labelnames: list[str], *,
                 per_tenant: bool, registry: CollectorRegistry, **kwargs) -> None:
        if TENANT in labelnames:
            raise ValueError(f"{name}: pass the label names after {TENANT!r}; it is added when per_tenant")
        self.per_tenant = per_tenant
        names = [TENANT, *labelnames] if per_tenant else list(labelnames)
        self.metric = kind(name, documentation, names, registry=registry, **kwargs)

    def labels(self, tenant: str, *values: str, **by_name: str):
        """The child for `tenant` and the other label values, as prometheus_client's labels()."""
        if not self.per_tenant:
            return self.metric.labels(*values, **by_name)
        if by_name:
            return self.metric.labels(**{TENANT: tenant, **by_name})
        return self.metric.labels(tenant, *values)
