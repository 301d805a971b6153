"""Admin: a tenant's semantic cache: statistics and invalidation."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request

from gateway.api.admin.auditing import AuditorDep
from gateway.api.deps import AdminDep
from gateway.cache.semantic_cache import SemanticCache
from gateway.domain.errors import not_found
from gateway.services.cache import invalidate
from gateway.services.deps import ServicesDep

router = APIRouter(prefix="/admin/tenants", tags=["admin"])


def get_cache(request: Request, _: AdminDep) -> SemanticCache:
    cache = request.app.state.services.cache
    if cache is None:
        raise not_found("The semantic cache is not enabled on this gateway (TOLLGATE_CACHE_ENABLED).")
    return cache


CacheDep = Annotated[SemanticCache, Depends(get_cache)]
# Ids from the URL go into the cache's table and the audit log: no control characters (PostgreSQL refuses
# NUL in text), no longer than a column holds. Tenant ids are UUIDs, entry ids hex.
PathId = Annotated[str, Path(max_length=64, pattern=r"^[^\x00-\x1f\x7f]+$")]


@router.get("/{tenant_id}/cache/stats")
async def cache_stats(tenant_id: str, cache: CacheDep, _: AdminDep) -> dict:
    """Entries, namespaces, and hit/miss/bypass counts since start-up."""
    s = cache.stats(tenant_id)
    return {"tenant_id": s.tenant_id, "entries": s.entries, "namespaces": s.namespaces, "hits": s.hits,
            "misses": s.misses, "bypasses": s.bypasses, "rejected_by_guard": s.rejected_by_guard}


@router.delete("/{tenant_id}/cache")
async def invalidate_tenant(tenant_id: PathId, cache: CacheDep, auditor: AuditorDep, services: ServicesDep) -> dict:
    """Drop every cached answer of the tenant, on every replica (`deleted` counts this one's)."""
    deleted = await invalidate(cache, auditor, services, tenant_id)
    return {"tenant_id": tenant_id, "deleted": deleted}


@router.delete("/{tenant_id}/cache/{entry_id}")
async def invalidate_entry(tenant_id: PathId, entry_id: PathId, cache: CacheDep, auditor: AuditorDep,
                           services: ServicesDep) -> dict:
    """Drop one cached answer; 404 when this replica has no such entry of the tenant (each replica
    keeps the answers it generated, so every replica is told to drop it either way)."""
    deleted = await invalidate(cache, auditor, services, tenant_id, entry_id)
    if not deleted:
        raise not_found(f"No cache entry {entry_id!r} for tenant {tenant_id!r}.")
    return {"tenant_id": tenant_id, "entry_id": entry_id, "deleted": deleted}
