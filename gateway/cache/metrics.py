"""Prometheus series for the semantic cache, per tenant and model."""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

# The lookup budget is 15 ms p99: resolve around it.
_LOOKUP_BUCKETS = (0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1, 0.25)


class CacheMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = r = registry if registry is not None else CollectorRegistry()
        self.lookups = Counter("tollgate_cache_lookups_total", "Cache lookups by result",
                               ["tenant", "model", "result", "tier"], registry=r)  # result: hit|miss|bypass
        self.rejected = Counter("tollgate_cache_guard_rejections_total",
                                "Candidates above the threshold refused by a guard",
                                ["tenant", "model", "guard"], registry=r)
        self.tokens_saved = Counter("tollgate_cache_tokens_saved_total", "Tokens not generated thanks to hits",
                                    ["tenant", "model", "kind"], registry=r)  # kind: prompt|completion
        self.money_saved = Counter("tollgate_cache_money_saved_total",
                                   "List price minus cache price of hits, in the configured currency",
                                   ["tenant", "model"], registry=r)
        self.stores = Counter("tollgate_cache_stores_total", "Answers stored or refused",
                              ["tenant", "model", "result"], registry=r)  # result: stored|refused|bypass
        self.evictions = Counter("tollgate_cache_evictions_total", "Entries dropped",
                                 ["tenant", "reason"], registry=r)  # reason: lru|ttl|invalidated
        self.lookup_latency = Histogram("tollgate_cache_lookup_seconds", "Lookup latency, embedding included",
                                        ["tier"], buckets=_LOOKUP_BUCKETS, registry=r)

    def lookup(self, tenant: str, model: str, result: str, tier: str | None, seconds: float) -> None:
        self.lookups.labels(tenant, model, result, tier or "none").inc()
        self.lookup_latency.labels(tier or "none").observe(seconds)

    def saved(self, tenant: str, model: str, *, prompt_tokens: int, completion_tokens: int, money: float) -> None:
        self.tokens_saved.labels(tenant, model, "prompt").inc(prompt_tokens)
        self.tokens_saved.labels(tenant, model, "completion").inc(completion_tokens)
        if money > 0:
            self.money_saved.labels(tenant, model).inc(money)
