"""One namespace's vectors: exact flat search while small, HNSW once large; lazy deletion.

A flat scan of 100k x 384 float32 reads 150 MB per query, which is memory-bound at ~10-25 ms
on one core: over the lookup budget. HNSW answers in well under a millisecond. Its scores
are exact inner products (it stores the full vectors), so approximation can only cost a hit
(a neighbour not found), never serve a wrong one: the threshold and the guards see true scores.

Rows are only appended; a removed entry's row is marked dead and skipped, and the index is
rebuilt from live rows once the dead share passes a bound. That keeps LRU eviction O(1)
instead of FAISS's O(n) `remove_ids` (which HNSW does not support at all).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import faiss
import numpy as np


@dataclass(slots=True, frozen=True)
class IndexConfig:
    hnsw_above: int = 20_000  # live rows from which a namespace switches to HNSW
    hnsw_m: int = 32
    hnsw_ef_construction: int = 40
    hnsw_ef_search: int = 64
    rebuild_dead_fraction: float = 0.25
    max_dead_probe: int = 32  # extra neighbours fetched to step over dead rows

    def __post_init__(self) -> None:
        for name in ("hnsw_above", "hnsw_m", "hnsw_ef_construction", "hnsw_ef_search"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_dead_probe < 0:
            raise ValueError(f"max_dead_probe must be >= 0, got {self.max_dead_probe}")
        if not 0.0 < self.rebuild_dead_fraction <= 1.0:
            raise ValueError(f"rebuild_dead_fraction must be in (0, 1], got {self.rebuild_dead_fraction}")


def _flat(dim: int, config: IndexConfig) -> faiss.Index:
    return faiss.IndexFlatIP(dim)  # cosine on unit vectors


def _hnsw(dim: int, config: IndexConfig) -> faiss.Index:
    index = faiss.IndexHNSWFlat(dim, config.hnsw_m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = config.hnsw_ef_construction
    index.hnsw.efSearch = config.hnsw_ef_search
    return index


INDEX_KINDS: dict[str, Callable[[int, IndexConfig], faiss.Index]] = {"flat": _flat, "hnsw": _hnsw}


class NamespaceIndex:
    def __init__(self, dim: int, config: IndexConfig | None = None) -> None:
        self.dim = dim
        self.config = config or IndexConfig()
        self.kind = "flat"
        self._index = INDEX_KINDS[self.kind](dim, self.config)
        self._rows: list[str | None] = []  # row -> entry id; None once removed
        self._row_of: dict[str, int] = {}
        self._vectors = np.empty((0, dim), dtype=np.float32)  # [rows, dim], kept to rebuild
        self._size = 0  # rows used in _vectors (it grows by doubling)

    def __len__(self) -> int:
        return len(self._row_of)

    @property
    def dead(self) -> int:
        return len(self._rows) - len(self._row_of)

    def add(self, entry_id: str, vector: np.ndarray) -> None:
        self.add_many([entry_id], np.asarray(vector).reshape(1, self.dim))

    def add_many(self, entry_ids: list[str], vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(entry_ids), self.dim)
        for entry_id in entry_ids:
            self._forget(entry_id)
        if self.kind == "flat" and len(self._row_of) + len(entry_ids) > self.config.hnsw_above:
            self._append(entry_ids, vectors)
            self._rebuild()  # switches to HNSW, built from all live rows in one go
            return
        self._index.add(vectors)
        self._append(entry_ids, vectors)

    def remove(self, entry_id: str) -> bool:
        if not self._forget(entry_id):
            return False
        if self.dead > max(64, self.config.rebuild_dead_fraction * len(self._rows)):
            self._rebuild()
        return True

    def search(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Up to k live (entry id, exact cosine) pairs, best first."""
        if not self._row_of:
            return []
        want = min(len(self._rows), k + min(self.dead, self.config.max_dead_probe))
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

    def _forget(self, entry_id: str) -> bool:
        row = self._row_of.pop(entry_id, None)
        if row is None:
            return False
        self._rows[row] = None
        return True

    def _append(self, entry_ids: list[str], vectors: np.ndarray) -> None:
        needed = self._size + len(entry_ids)
        if needed > len(self._vectors):
            grown = np.empty((max(needed, 2 * len(self._vectors), 64), self.dim), dtype=np.float32)
            grown[:self._size] = self._vectors[:self._size]
            self._vectors = grown
        self._vectors[self._size:needed] = vectors
        for entry_id in entry_ids:
            self._row_of[entry_id] = len(self._rows)
            self._rows.append(entry_id)
        self._size = needed

    def _rebuild(self) -> None:
        live_rows = [row for row, entry_id in enumerate(self._rows) if entry_id is not None]
        ids = [self._rows[row] for row in live_rows]
        vectors = self._vectors[live_rows]  # [live, dim] copy
        self.kind = "hnsw" if len(ids) > self.config.hnsw_above else "flat"
        self._index = INDEX_KINDS[self.kind](self.dim, self.config)
        self._rows, self._row_of = [], {}
        self._vectors, self._size = np.empty((0, self.dim), dtype=np.float32), 0
        if ids:
            self._index.add(vectors)
            self._append(ids, vectors)
