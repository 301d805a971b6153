"""The cache's own accuracy, per tenant: how many sampled hits the model answered differently, the
estimated wrong-hit rate, and how far the tenant's threshold has tightened because of it.

Tightening: once `min_samples` checks have come in since the last change and more than `bound` of them
disagreed, the tenant's threshold rises by `step` (up to `max_tightening`); after `relax_after` agreeing
checks in a row it falls back by one step. Kept in memory only (per replica, reset on restart): the
estimate needs fresh samples anyway, and a restart starts from the configured threshold, the safe side
of the cache's own tuning.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass(slots=True, frozen=True)
class AuditConfig:
    fraction: float = 0.01  # of hits also sent to the model in the background
    max_in_flight: int = 2  # background checks at once; a sample beyond it is skipped
    agree_similarity: float = 0.90  # cosine of the two answers' embeddings that counts as the same answer
    bound: float = 0.05  # wrong-hit rate above which the threshold tightens
    min_samples: int = 10
    step: float = 0.01
    max_tightening: float = 0.08
    relax_after: int = 100

    def __post_init__(self) -> None:
        if not 0.0 <= self.fraction <= 1.0:
            raise ValueError(f"fraction must be in [0, 1], got {self.fraction}")
        if self.max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {self.max_in_flight}")
        if not 0.0 < self.agree_similarity <= 1.0:
            raise ValueError(f"agree_similarity must be in (0, 1], got {self.agree_similarity}")
        if not 0.0 <= self.bound < 1.0:
            raise ValueError(f"bound must be in [0, 1), got {self.bound}")
        for name in ("min_samples", "relax_after"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.step <= self.max_tightening < 1.0:
            raise ValueError("need 0 <= step <= max_tightening < 1")


@dataclass(slots=True)
class TenantAccuracy:
    tenant_id: str
    sampled: int = 0  # checks completed (agreed + disagreed)
    disagreed: int = 0
    tightening: float = 0.0  # added to the tenant's threshold
    # Since the last change of `tightening`:
    window_sampled: int = 0
    window_disagreed: int = 0
    clean_streak: int = 0

    @property
    def estimated_wrong_hit_rate(self) -> float:
        """Disagreements over checks, with one pseudo-check of each kind so a first sample is no verdict."""
        return (self.disagreed + 0.5) / (self.sampled + 1) if self.sampled else 0.0


@dataclass(slots=True)
class AccuracyAudit:
    config: AuditConfig = field(default_factory=AuditConfig)
    _tenants: dict[str, TenantAccuracy] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, tenant_id: str, agreed: bool) -> TenantAccuracy:
        """One completed check; the tenant's figures after it (a copy)."""
        cfg = self.config
        with self._lock:
            t = self._tenants.setdefault(tenant_id, TenantAccuracy(tenant_id))
            t.sampled += 1
            t.window_sampled += 1
            t.disagreed += not agreed
            t.window_disagreed += not agreed
            t.clean_streak = t.clean_streak + 1 if agreed else 0
            if t.window_sampled >= cfg.min_samples and t.window_disagreed > cfg.bound * t.window_sampled:
                t.tightening = min(cfg.max_tightening, round(t.tightening + cfg.step, 6))
                t.window_sampled = t.window_disagreed = 0
            elif t.clean_streak >= cfg.relax_after and t.tightening > 0:
                t.tightening = max(0.0, round(t.tightening - cfg.step, 6))
                t.window_sampled = t.window_disagreed = t.clean_streak = 0
            return TenantAccuracy(**{k: getattr(t, k) for k in TenantAccuracy.__slots__})

    def tightening(self, tenant_id: str) -> float:
        with self._lock:
            t = self._tenants.get(tenant_id)
            return t.tightening if t else 0.0

    def of(self, tenant_id: str) -> TenantAccuracy:
        with self._lock:
            t = self._tenants.get(tenant_id) or TenantAccuracy(tenant_id)
            return TenantAccuracy(**{k: getattr(t, k) for k in TenantAccuracy.__slots__})
