"""A tenant's semantic cache, invalidated: dropped here, told to every replica, audited; the admin API and the
console both call this."""
from __future__ import annotations

import asyncio

from gateway.audit.auditor import Auditor
from gateway.audit.record import Target
from gateway.cache.semantic_cache import SemanticCache
from gateway.events.events import CacheInvalidated
from gateway.services import Services
from gateway.services.announce import announce


async def _record(auditor: Auditor, services: Services, tenant_id: str, entry_id: str | None, deleted: int) -> None:
    """The cache keeps entries in memory and its own table, outside any transaction of the audit log's:
    the invalidation is applied first, then recorded in a transaction of its own. If that write fails the
    request fails (a retry is harmless) though the entries are already gone."""
    target = Target("cache", tenant_id if entry_id is None else f"{tenant_id}/{entry_id}")
    await asyncio.to_thread(auditor.record_alone, services.database, "cache.invalidate", target,
                            after={"tenant_id": tenant_id, "entry_id": entry_id, "deleted_here": deleted})


async def invalidate(cache: SemanticCache, auditor: Auditor, services: Services, tenant_id: str,
                     entry_id: str | None = None) -> int:
    """Drop a tenant's answers (or one), tell every replica, audit; how many this replica dropped."""
    deleted = await cache.invalidate(tenant_id, entry_id)
    announce(services, CacheInvalidated(tenant_id, entry_id))
    await _record(auditor, services, tenant_id, entry_id, deleted)  # told to every replica, found here or not
    return deleted
