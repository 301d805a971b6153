"""One namespace's vectors: exact flat search while small, HNSW once large; lazy deletion.

A flat scan of 100k x 384 float32 reads 150 MB per query, which is memory-bound at ~10-25 ms
on one core: over the lookup budget. HNSW answers in well under a millisecond. Its scores
are exact inner products (it stores the full vectors), so approximation can only cost a hit
(a neighbour not found), never serve a wrong one: the threshold and the guards see true scores.

Rows are only appended; a removed entry's row is marked dead and skipped, and the index is
rebuilt from live rows once the dead share passes a bound. That keeps LRU eviction O(1)
instead of FAISS's O(n) `remove_ids` (which HNSW does not support at all).

Building HNSW over tens of thousands of rows takes seconds. Past `sync_rebuild_below` rows a
rebuild triggered by a single add or remove runs in a background thread over a snapshot while
the current index keeps answering; the next call after it finishes swaps it in and replays what
changed meanwhile. Bulk loads (start-up) build in the caller's thread.
"""
from __future__ import annotations

import threading
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
    sync_rebuild_below: int = 5_000  # rows; larger rebuilds go to a background thread

    def __post_init__(self) -> None:
        for name in ("hnsw_above", "hnsw_m", "hnsw_ef_construction", "hnsw_ef_search"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.sync_rebuild_below < 0:
            raise ValueError(f"sync_rebuild_below must be >= 0, got {self.sync_rebuild_below}")
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


class _Build:
    """A rebuild running in a thread: the live rows of a snapshot, indexed afresh."""

    def __init__(self, ids: list[str], vectors: np.ndarray, snapshot_rows: int, kind: str,
                 dim: int, config: IndexConfig) -> None:
        self.ids, self.vectors, self.snapshot_rows, self.kind = ids, vectors, snapshot_rows, kind
        self.index = INDEX_KINDS[kind](dim, config)
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"cache-index-{kind}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.index.add(self.vectors)  # FAISS releases the GIL here
        except BaseException as e:  # handed to the owner, which logs it and rebuilds in its own thread
            self.error = e
        finally:
            self.done.set()


class NamespaceIndex:
    """Not thread-safe: the owner serialises calls (SemanticCache holds one lock)."""

    def __init__(self, dim: int, config: IndexConfig | None = None) -> None:
        self.dim = dim
        self.config = config or IndexConfig()
        self.kind = "flat"
        self._index = INDEX_KINDS[self.kind](dim, self.config)
        self._rows: list[str | None] = []  # row -> entry id; None once removed
        self._row_of: dict[str, int] = {}
        self._build: _Build | None = None

    def __len__(self) -> int:
        return len(self._row_of)

    @property
    def dead(self) -> int:
        return len(self._rows) - len(self._row_of)

    @property
    def rebuilding(self) -> bool:
        return self._build is not None

    def add(self, entry_id: str, vector: np.ndarray) -> None:
        """One row; a rebuild it triggers on a large index runs in the background."""
        self._adopt_finished_build()
        self._forget(entry_id)
        row = np.ascontiguousarray(vector, dtype=np.float32).reshape(1, self.dim)
        self._index.add(row)
        self._append([entry_id])
        if self._wants_rebuild():
            self._start_rebuild(background=True)

    def add_many(self, entry_ids: list[str], vectors: np.ndarray) -> None:
        """Bulk load: any rebuild it triggers runs here, in the caller's thread."""
        self.wait()
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(entry_ids), self.dim)
        for entry_id in entry_ids:
            self._forget(entry_id)
        self._index.add(vectors)
        self._append(entry_ids)
        if self._wants_rebuild():
            self._start_rebuild(background=False)

    def remove(self, entry_id: str) -> bool:
        self._adopt_finished_build()
        if not self._forget(entry_id):
            return False
        if self._wants_rebuild():
            self._start_rebuild(background=True)
        return True

    def search(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Up to k live (entry id, exact cosine) pairs, best first."""
        self._adopt_finished_build()
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

    def wait(self) -> None:
        """Finish and adopt a background rebuild (start-up, tests, benchmarks)."""
        if self._build is not None:
            self._build.done.wait()
            self._adopt_finished_build()

    # --- internals

    def _wants_rebuild(self) -> bool:
        if self._build is not None:
            return False
        too_big_for_flat = self.kind == "flat" and len(self._row_of) > self.config.hnsw_above
        too_many_dead = self.dead > max(64, self.config.rebuild_dead_fraction * len(self._rows))
        return too_big_for_flat or too_many_dead

    def _forget(self, entry_id: str) -> bool:
        row = self._row_of.pop(entry_id, None)
        if row is None:
            return False
        self._rows[row] = None
        return True

    def _append(self, entry_ids: list[str]) -> None:
        """Record rows already added to the FAISS index (which keeps the vectors: no copy here)."""
        for entry_id in entry_ids:
            self._row_of[entry_id] = len(self._rows)
            self._rows.append(entry_id)

    def _reconstruct(self, rows: list[int]) -> np.ndarray:
        if not rows:
            return np.empty((0, self.dim), dtype=np.float32)
        return self._index.reconstruct_batch(np.asarray(rows, dtype=np.int64))  # [len(rows), dim]

    def _start_rebuild(self, *, background: bool) -> None:
        live_rows = [row for row, entry_id in enumerate(self._rows) if entry_id is not None]
        ids = [self._rows[row] for row in live_rows]
        kind = "hnsw" if len(ids) > self.config.hnsw_above else "flat"
        build = _Build(ids, self._reconstruct(live_rows), len(self._rows), kind, self.dim, self.config)
        self._build = build
        if not background or len(self._rows) < self.config.sync_rebuild_below:
            self.wait()

    def _adopt_finished_build(self) -> None:
        build = self._build
        if build is None or not build.done.is_set():
            return
        self._build = None
        if build.error is not None:
            raise RuntimeError(f"rebuilding the {build.kind} index failed") from build.error
        # Rows appended since the snapshot, and snapshot rows removed since, are replayed.
        tail = [(row, eid) for row, eid in enumerate(self._rows[build.snapshot_rows:], build.snapshot_rows)
                if eid is not None]
        # A snapshot id still live at its pre-snapshot row is kept; removed or re-added ones are dead.
        snapshot_ids = [eid if self._row_of.get(eid, build.snapshot_rows) < build.snapshot_rows else None
                        for eid in build.ids]
        tail_vectors = self._reconstruct([row for row, _ in tail])
        if tail:
            build.index.add(tail_vectors)
        self.kind, self._index = build.kind, build.index
        self._rows = snapshot_ids + [eid for _, eid in tail]
        self._row_of = {eid: row for row, eid in enumerate(self._rows) if eid is not None}
        build.vectors = None  # the new index holds its own copy
