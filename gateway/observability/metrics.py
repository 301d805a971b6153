"""Prometheus metrics. Each app owns its registry, so two apps in one process never collide.

Callers always pass the tenant id; whether it becomes a label is decided here (tenant_series)."""
from __future__ import annotations

from functools import partial

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from gateway.observability.tenant_series import TenantLabelled

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class Metrics:
    def __init__(self, *, per_tenant: bool = False) -> None:
        self.registry = r = CollectorRegistry()
        self.per_tenant = per_tenant
        by_tenant = partial(TenantLabelled, per_tenant=per_tenant, registry=r)
        # requests, tokens, cost, rejections: labels(tenant, ...) whatever per_tenant says.
        self.requests = by_tenant(Counter, "tollgate_requests_total", "Tenant API requests by outcome",
                                  ["model", "endpoint", "status"])
        self.tokens = by_tenant(Counter, "tollgate_tokens_total", "Tokens billed",
                                ["model", "kind"])  # kind: prompt|completion|cached
        self.cost = by_tenant(Counter, "tollgate_cost_total", "Money billed, in the configured currency",
                              ["model"])
        self.latency = Histogram("tollgate_request_latency_seconds", "Request latency, end to end",
                                 ["model", "endpoint"], buckets=_LATENCY_BUCKETS, registry=r)
        self.ttft = Histogram("tollgate_time_to_first_token_seconds", "Time to the first generated token",
                              ["model"], buckets=_LATENCY_BUCKETS, registry=r)
        self.rejections = by_tenant(Counter, "tollgate_limiter_rejections_total", "Requests refused by limits",
                                    ["reason"])  # reason: rate_limit_exceeded|insufficient_quota
        # Matches of tenants' guardrail rules (gateway.guardrails): counts only, never the text.
        self.guardrails = by_tenant(Counter, "tollgate_guardrail_matches_total", "Guardrail rule matches",
                                    ["stage", "mode"])  # stage: input|output; mode: block|redact|log_only
        self.inflight = Gauge("tollgate_inflight_generations", "Generations running now", registry=r)

    def render(self) -> bytes:
        """This app's metrics, then the process-wide ones (the engine's, the router's)."""
        return generate_latest(self.registry) + generate_latest(REGISTRY)

    def record_usage(self, tenant: str, model: str, *, prompt: int, completion: int, cached: int,
                     cost: float) -> None:
        self.tokens.labels(tenant, model, "prompt").inc(prompt)
        self.tokens.labels(tenant, model, "completion").inc(completion)
        if cached:
            self.tokens.labels(tenant, model, "cached").inc(cached)
        self.cost.labels(tenant, model).inc(cost)
