"""How the engine orders a request against others (not what it generates: that is SamplingParams)."""
from __future__ import annotations

from dataclasses import dataclass

PRIORITY_RANGE = (-1_000_000, 1_000_000)


@dataclass(frozen=True, slots=True)
class ScheduleParams:
    # Lower runs earlier (vLLM's convention); waiting requests of a lower number displace running ones.
    priority: int = 0
    # Fair share: an opaque key for whoever is served (the gateway's per-tenant HMAC, never its identity),
    # and its weight (2.0: twice the share of a tenant weighted 1.0). None: one anonymous tenant.
    tenant: str | None = None
    weight: float = 1.0
    # Reserved throughput: output tokens/s the tenant's reservation guarantees on this model; its work runs
    # ahead of best-effort work up to that rate (workers/engine/reservations.py). 0: best-effort only.
    reserved_tokens_per_s: float = 0.0

    def __post_init__(self) -> None:
        lo, hi = PRIORITY_RANGE
        if isinstance(self.priority, bool) or not isinstance(self.priority, int) or not lo <= self.priority <= hi:
            raise ValueError(f"priority must be an integer in [{lo}, {hi}], got {self.priority!r}")
        if self.tenant is not None and (not isinstance(self.tenant, str) or not 0 < len(self.tenant) <= 256):
            raise ValueError("tenant must be a non-empty string of at most 256 characters")
        if isinstance(self.weight, bool) or not isinstance(self.weight, int | float) or not 0 < self.weight <= 1e6:
            raise ValueError(f"weight must be a number in (0, 1e6], got {self.weight!r}")
        r = self.reserved_tokens_per_s
        if isinstance(r, bool) or not isinstance(r, int | float) or not 0 <= r <= 1e9:
            raise ValueError(f"reserved_tokens_per_s must be a number in [0, 1e9], got {r!r}")
