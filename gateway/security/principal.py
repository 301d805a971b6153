"""Who is calling: a tenant through one of its keys, with every limit the routes need."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Principal:
    tenant_id: str
    tenant_name: str
    key_id: str
    key_models: tuple[str, ...] | None  # None = every model
    # None = unlimited.
    rpm: int | None
    tpm: int | None
    monthly_token_budget: int | None
    key_rpm: int | None
    key_tpm: int | None
    # The tenant's semantic-cache settings; None = the cache's defaults.
    cache_enabled: bool = True
    cache_allow_sampling: bool = False
    cache_threshold: float | None = None
    cache_ttl_s: int | None = None
    cache_max_entries: int | None = None
    # The tenant's scheduling plan in the engines' queues (lower priority runs earlier; fair-share weight).
    priority: int = 0
    share_weight: float = 1.0
    plan: str | None = None  # the tenant's commercial plan, which routing rules may match on
    # Output caps, the tenant's and the key's combined (the stricter cap; the key's default before the tenant's).
    max_output_tokens: int | None = None  # None: no cap
    default_max_tokens: int | None = None  # for a request naming none; None: the gateway's default
    output_cap_mode: str = "reject"  # | "clamp"
    # The tenant's active reservations: (model, output tokens/s), the engine's guarantee per priced model.
    reserved: tuple[tuple[str, float], ...] = ()


def reserved_rate(principal: Principal, model: str) -> float:
    """Output tokens/s the tenant has reserved on `model` (0: none)."""
    return next((rate for m, rate in principal.reserved if m == model), 0.0)


def key_allows_model(principal: Principal, model: str) -> bool:
    return principal.key_models is None or model in principal.key_models
