"""One namespace's vectors: a flat inner-product FAISS index with lazy deletion.

Rows are only ever appended; a removed entry's row is marked dead and skipped, and the
index is rebuilt from the live rows once the dead share passes a bound. That keeps LRU
eviction O(1) instead of the O(n) compaction `remove_ids` does on every call.
"""
from __future__ import annotations

import faiss
import numpy as np


class NamespaceIndex:
    def __init__(self, dim: int, *, rebuild_dead_fraction: float = 0.25) -> None:
        self.dim = dim
        self._rebuild_dead_fraction = rebuild_dead_fraction
        self._index = faiss.IndexFlatIP(dim)  # cosine on unit vectors
        self._rows: list[str | None] = []  # row -> entry id; None once removed
        self._row_of: dict[str, int] = {}
        self._vectors: list[np.ndarray] = []  # kept to rebuild without the dead rows

    def __len__(self) -> int:
        return len(self._row_of)

    @property
    def dead(self) -> int:
        return len(self._rows) - len(self._row_of)

    def add(self, entry_id: str, vector: np.ndarray) -> None:
        if entry_id in self._row_of:
            self.remove(entry_id)
        row = np.ascontiguousarray(vector, dtype=np.float32).reshape(1, self.dim)
        self._index.add(row)
        self._row_of[entry_id] = len(self._rows)
        self._rows.append(entry_id)
        self._vectors.append(row[0])

    def add_many(self, entry_ids: list[str], vectors: np.ndarray) -> None:
        """Bulk load (start-up re-indexing): one FAISS add for all rows."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(entry_ids), self.dim)
        for entry_id in entry_ids:
            if entry_id in self._row_of:
                self.remove(entry_id)
        self._index.add(vectors)
        for i, entry_id in enumerate(entry_ids):
            self._row_of[entry_id] = len(self._rows)
            self._rows.append(entry_id)
            self._vectors.append(vectors[i])

    def remove(self, entry_id: str) -> bool:
        row = self._row_of.pop(entry_id, None)
        if row is None:
            return False
        self._rows[row] = None
        if self.dead > max(64, self._rebuild_dead_fraction * len(self._rows)):
            self._rebuild()
        return True

    def search(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Up to k live (entry id, cosine) pairs, best first."""
        if not self._row_of:
            return []
        # Dead rows may crowd the top: ask for enough extra to still return k live ones.
        want = min(len(self._rows), k + self.dead)
        query = np.ascontiguousarray(vector, dtype=np.float32).reshape(1, self.dim)
        scores, rows = self._index.search(query, want)  # [1, want] each
        out: list[tuple[str, float]] = []
        for score, row in zip(scores[0], rows[0]):
            entry_id = self._rows[row] if row >= 0 else None
            if entry_id is not None:
                out.append((entry_id, float(score)))
                if len(out) == k:
                    break
        return out

    def _rebuild(self) -> None:
        live = [(entry_id, self._vectors[row]) for row, entry_id in enumerate(self._rows) if entry_id is not None]
        self._index = faiss.IndexFlatIP(self.dim)
        self._rows, self._row_of, self._vectors = [], {}, []
        if live:
            self.add_many([e for e, _ in live], np.stack([v for _, v in live]))
