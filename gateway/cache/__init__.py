"""Tenant-isolated semantic cache for chat completions."""
from gateway.cache.config import DEFAULT_THRESHOLD, CacheConfig, TenantCachePolicy
from gateway.cache.metrics import CacheMetrics
from gateway.cache.semantic_cache import SemanticCache
from gateway.cache.types import CachedAnswer, CacheLookup, CacheRequest, CacheStats

__all__ = ["DEFAULT_THRESHOLD", "CacheConfig", "CacheLookup", "CacheMetrics", "CacheRequest", "CacheStats",
           "CachedAnswer", "SemanticCache", "TenantCachePolicy"]
