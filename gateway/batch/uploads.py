"""Uploads in progress, per tenant, in this process: a tenant that already has `per_tenant` uploads being read
and checked is refused another until one ends, so one tenant cannot hold every worker thread and a heap of
request bodies. Plain counters: every caller runs on the one event loop."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class TooManyUploads(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"Too many concurrent uploads: at most {limit} per tenant at a time. Retry when one "
                         "has finished.")
        self.limit = limit


class UploadSlots:
    def __init__(self, per_tenant: int) -> None:
        if per_tenant < 1:
            raise ValueError(f"per_tenant must be >= 1, got {per_tenant}")
        self.per_tenant = per_tenant
        self._held: dict[str, int] = {}

    @contextmanager
    def hold(self, tenant_id: str) -> Iterator[None]:
        """One of the tenant's slots for the `with` block; TooManyUploads when none is free."""
        if self._held.get(tenant_id, 0) >= self.per_tenant:
            raise TooManyUploads(self.per_tenant)
        self._held[tenant_id] = self._held.get(tenant_id, 0) + 1
        try:
            yield
        finally:
            left = self._held[tenant_id] - 1
            if left:
                self._held[tenant_id] = left
            else:
                del self._held[tenant_id]

    def held(self, tenant_id: str) -> int:
        return self._held.get(tenant_id, 0)
