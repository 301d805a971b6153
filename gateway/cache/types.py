"""The cache's data: what a request looks like to it and what a lookup returns (what it stores:
gateway/domain/cache.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gateway.domain.cache import CachedAnswer, CacheEntry

LookupStatus = Literal["hit", "miss", "bypass"]
Tier = Literal["exact", "semantic"]
__all__ = ["CacheEntry", "CacheLookup", "CacheRequest", "CacheStats", "CachedAnswer"]


@dataclass(slots=True, frozen=True)
class CacheRequest:
    """The parts of a chat request that decide its answer. messages: OpenAI-shaped dicts."""

    tenant_id: str
    model: str
    messages: list[dict]
    temperature: float = 1.0  # OpenAI's default: sampled, so not cached unless asked
    top_p: float | None = None
    max_tokens: int | None = None
    stop: str | list[str] | None = None
    seed: int | None = None
    stream: bool = False
    # Any other answer-changing parameter (response_format, penalties, logit_bias...):
    # hashed into the namespace so two requests differing there never share an entry.
    extra_params: dict | None = None

    def __post_init__(self) -> None:
        if not self.tenant_id:
            raise ValueError("tenant_id must be non-empty")
        if not self.model:
            raise ValueError("model must be non-empty")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")


@dataclass(slots=True, frozen=True)
class CacheLookup:
    status: LookupStatus
    entry: CachedAnswer | None = None
    score: float | None = None
    tier: Tier | None = None
    entry_id: str | None = None
    reason: str | None = None  # why a bypass or a rejected candidate, for logs and headers


@dataclass(slots=True)
class CacheStats:
    tenant_id: str
    entries: int = 0
    namespaces: int = 0
    hits: int = 0
    misses: int = 0
    bypasses: int = 0
    rejected_by_guard: dict[str, int] = field(default_factory=dict)
