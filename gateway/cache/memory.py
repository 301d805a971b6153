"""Where live entries sit in memory: by id, by exact key, per-namespace vector indexes, per-tenant LRU.

Not thread-safe by itself; SemanticCache serialises access with one lock.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from gateway.cache.types import CacheEntry
from gateway.embedding.vector_index import IndexConfig, NamespaceIndex


class EntryStore:
    def __init__(self, dim: int, index_config: IndexConfig | None = None) -> None:
        self.dim = dim
        self._index_config = index_config or IndexConfig()
        self._entries: dict[str, CacheEntry] = {}
        self._exact: dict[str, str] = {}  # exact key -> entry id
        self._indexes: dict[str, NamespaceIndex] = {}  # one per (tenant, model, context) namespace
        self._lru: dict[str, OrderedDict[str, None]] = {}  # tenant -> entry ids, least recent first

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, entry_id: str) -> CacheEntry | None:
        return self._entries.get(entry_id)

    def by_exact_key(self, key: str) -> CacheEntry | None:
        entry_id = self._exact.get(key)
        return self._entries.get(entry_id) if entry_id else None

    def search(self, namespace: str, vector: np.ndarray, k: int) -> list[tuple[CacheEntry, float]]:
        index = self._indexes.get(namespace)
        if index is None:
            return []
        return [(self._entries[eid], score) for eid, score in index.search(vector, k)]

    def tenant_size(self, tenant_id: str) -> int:
        return len(self._lru.get(tenant_id, ()))

    def tenant_namespaces(self, tenant_id: str) -> int:
        return len({self._entries[eid].namespace for eid in self._lru.get(tenant_id, ())})

    def tenant_entry_ids(self, tenant_id: str) -> list[str]:
        return list(self._lru.get(tenant_id, ()))

    def ids(self) -> list[str]:
        return list(self._entries)

    def add(self, entry: CacheEntry) -> None:
        """Insert (or replace the entry under the same exact key); most recently used."""
        previous = self.by_exact_key(entry.exact_key)
        if previous is not None:
            self.remove(previous.id)
        self._entries[entry.id] = entry
        self._exact[entry.exact_key] = entry.id
        index = self._indexes.get(entry.namespace)
        if index is None:
            index = self._indexes[entry.namespace] = NamespaceIndex(self.dim, self._index_config)
        index.add(entry.id, entry.vector)
        self._lru.setdefault(entry.tenant_id, OrderedDict())[entry.id] = None

    def add_many(self, entries: list[CacheEntry]) -> None:
        """Bulk insert, oldest first (later entries are more recently used); one FAISS add per namespace."""
        latest = {entry.exact_key: entry for entry in entries}  # a later entry replaces an earlier one
        by_namespace: dict[str, list[CacheEntry]] = {}
        for entry in entries:
            if latest[entry.exact_key] is not entry:
                continue
            previous = self.by_exact_key(entry.exact_key)
            if previous is not None:
                self.remove(previous.id)
            self._entries[entry.id] = entry
            self._exact[entry.exact_key] = entry.id
            self._lru.setdefault(entry.tenant_id, OrderedDict())[entry.id] = None
            by_namespace.setdefault(entry.namespace, []).append(entry)
        for namespace, group in by_namespace.items():
            index = self._indexes.get(namespace)
            if index is None:
                index = self._indexes[namespace] = NamespaceIndex(self.dim, self._index_config)
            index.add_many([e.id for e in group], np.stack([e.vector for e in group]))

    def touch(self, entry: CacheEntry) -> None:
        self._lru[entry.tenant_id].move_to_end(entry.id)

    def remove(self, entry_id: str) -> CacheEntry | None:
        entry = self._entries.pop(entry_id, None)
        if entry is None:
            return None
        if self._exact.get(entry.exact_key) == entry_id:
            del self._exact[entry.exact_key]
        index = self._indexes[entry.namespace]
        index.remove(entry_id)
        if not len(index):
            del self._indexes[entry.namespace]
        lru = self._lru[entry.tenant_id]
        lru.pop(entry_id, None)
        if not lru:
            del self._lru[entry.tenant_id]
        return entry

    def remove_tenant(self, tenant_id: str) -> list[str]:
        ids = self.tenant_entry_ids(tenant_id)
        for entry_id in ids:
            self.remove(entry_id)
        return ids

    def evict_over(self, tenant_id: str, cap: int) -> list[str]:
        """Drop the tenant's least recently used entries until at most `cap` remain (0: no cap)."""
        evicted: list[str] = []
        lru = self._lru.get(tenant_id)
        while cap and lru and len(lru) > cap:
            entry_id = next(iter(lru))
            self.remove(entry_id)
            evicted.append(entry_id)
            lru = self._lru.get(tenant_id)
        return evicted
