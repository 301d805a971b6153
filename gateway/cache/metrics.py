"""Prometheus series for the semantic cache, per model (and per tenant when the operator opts in)."""
from __future__ import annotations

from functools import partial

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from gateway.observability.tenant_series import TenantLabelled

# The lookup budget is 15 ms p99: resolve around it.
_LOOKUP_BUCKETS = (0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1, 0.25)


class CacheMetrics:
    """Callers pass the tenant id to every labels(tenant, ...); it is a label only when `per_tenant`."""

    def __init__(self, registry: CollectorRegistry | None = None, *, per_tenant: bool = False) -> None:
        self.registry = r = registry if registry is not None else CollectorRegistry()
        self.per_tenant = per_tenant
        by_tenant = partial(TenantLabelled, per_tenant=per_tenant, registry=r)
        self.lookups = by_tenant(Counter, "tollgate_cache_lookups_total", "Cache lookups by result",
                                 ["model", "result", "tier"])  # result: hit|miss|bypass
        self.rejected = by_tenant(Counter, "tollgate_cache_guard_rejections_total",
                                  "Candidates above the threshold refused by a guard", ["model", "guard"])
        self.tokens_saved = by_tenant(Counter, "tollgate_cache_tokens_saved_total",
                                      "Tokens not generated thanks to hits", ["model", "kind"])  # prompt|completion
        self.money_saved = by_tenant(Counter, "tollgate_cache_money_saved_total",
                                     "List price minus cache price of hits, in the configured currency", ["model"])
        self.stores = by_tenant(Counter, "tollgate_cache_stores_total", "Answers stored or refused",
                                ["model", "result"])  # result: stored|refused|bypass
        self.evictions = by_tenant(Counter, "tollgate_cache_evictions_total", "Entries dropped",
                                   ["reason"])  # reason: lru|ttl|invalidated
        # The live accuracy check (live_check.py). outcome: agreed|disagreed|skipped|failed. The estimate and
        # the tightening are per tenant by nature: exported only when the tenant label is (per_tenant);
        # otherwise the counter's disagreed/(agreed+disagreed) is the estimate over all tenants.
        self.audit_checks = by_tenant(Counter, "tollgate_cache_audit_checks_total",
                                      "Hits also answered by the model in the background, by outcome", ["outcome"])
        self.wrong_hit_rate = Gauge("tollgate_cache_estimated_wrong_hit_rate",
                                    "Estimated share of hits the model answers differently", ["tenant"],
                                    registry=r) if per_tenant else None
        self.threshold_tightening = Gauge("tollgate_cache_threshold_tightening",
                                          "Added to the tenant's threshold by the live check", ["tenant"],
                                          registry=r) if per_tenant else None
        self.lookup_latency = Histogram("tollgate_cache_lookup_seconds", "Lookup latency, embedding included",
                                        ["tier"], buckets=_LOOKUP_BUCKETS, registry=r)

    def lookup(self, tenant: str, model: str, result: str, tier: str | None, seconds: float) -> None:
        self.lookups.labels(tenant, model, result, tier or "none").inc()
        self.lookup_latency.labels(tier or "none").observe(seconds)

    def audited(self, tenant: str, outcome: str, wrong_hit_rate: float, tightening: float) -> None:
        self.audit_checks.labels(tenant, outcome).inc()
        if self.wrong_hit_rate is not None:
            self.wrong_hit_rate.labels(tenant).set(wrong_hit_rate)
            self.threshold_tightening.labels(tenant).set(tightening)

    def saved(self, tenant: str, model: str, *, prompt_tokens: int, completion_tokens: int, money: float) -> None:
        self.tokens_saved.labels(tenant, model, "prompt").inc(prompt_tokens)
        self.tokens_saved.labels(tenant, model, "completion").inc(completion_tokens)
        if money > 0:
            self.money_saved.labels(tenant, model).inc(money)
