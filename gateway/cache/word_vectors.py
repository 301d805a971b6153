"""Word vectors from the sentence embedder itself, each word embedded alone and kept in an LRU table.

Why not a cross-encoder or an NLI model: none on PyPI ships its weights inside the package, and the
gateway loads nothing from a hub at run time. The MiniLM embedder is already loaded; a word embedded on
its own gives a usable near-synonym score (car/automobile 0.86, buy/purchase 0.87) while entities of one
kind stay apart (dog/cat 0.66, python/java 0.45). Times are the exception (yesterday/today 0.86): the
verifier takes those from a closed list instead (lexicon.CLOSED_CLASSES).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

import numpy as np


class WordVectors:
    """word -> unit vector, computed in one batch for the words not yet in the table."""

    def __init__(self, embedder, capacity: int = 50_000) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self._embedder = embedder
        self._capacity = capacity
        self._table: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._known = _vocabulary(embedder)

    def known(self, word: str) -> bool:
        """A whole word of the embedder's vocabulary: a real word, so never a typo of another one."""
        return word in self._known

    def vectors(self, words: Iterable[str]) -> dict[str, np.ndarray]:
        words = list(dict.fromkeys(words))
        with self._lock:
            missing = [w for w in words if w not in self._table]
        if missing:
            fresh = embed_many(self._embedder, missing)  # [len(missing), dim], unit rows
            with self._lock:
                for word, vector in zip(missing, fresh):
                    self._table[word] = vector
                while len(self._table) > self._capacity:
                    self._table.popitem(last=False)
        with self._lock:
            out = {}
            for w in words:
                vector = self._table.get(w)
                if vector is None:  # evicted by a concurrent fill: compute it again
                    vector = embed_many(self._embedder, [w])[0]
                else:
                    self._table.move_to_end(w)
                out[w] = vector
            return out

    def warm(self, words: Iterable[str] | None = None, batch: int = 32,
             stop: threading.Event | None = None) -> int:
        """Embed `words` (default: the embedder's whole-word vocabulary) into the table ahead of lookups, a
        small batch at a time so a lookup waits on the embedder for one batch at most; the number added.
        Lookups then embed only words outside it (typos, rare words). About 14 s of one core for MiniLM's
        22,500 words; `stop` ends it early."""
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        pending = sorted(self._known) if words is None else list(dict.fromkeys(words))
        pending = pending[:self._capacity]
        added = 0
        for start in range(0, len(pending), batch):
            if stop is not None and stop.is_set():
                break
            with self._lock:
                chunk = [w for w in pending[start:start + batch] if w not in self._table]
            if not chunk:
                continue
            fresh = embed_many(self._embedder, chunk)
            with self._lock:
                for word, vector in zip(chunk, fresh):
                    self._table[word] = vector
                    self._table.move_to_end(word, last=False)  # warmed words go first out, not live ones
                added += len(chunk)
        return added

    def __len__(self) -> int:
        with self._lock:
            return len(self._table)

    def similarity(self, a: str, b: str) -> float:
        v = self.vectors([a, b])
        return float(v[a] @ v[b])


def embed_many(embedder, texts: list[str]) -> np.ndarray:
    """[len(texts), dim]: one batch where the embedder has `embed`, else one text at a time (small fakes)."""
    embed = getattr(embedder, "embed", None)
    if callable(embed):
        return embed(texts)
    return np.stack([embedder.embed_one(t) for t in texts]) if texts else np.empty((0, embedder.dim), np.float32)


def _vocabulary(embedder) -> frozenset[str]:
    vocabulary = getattr(embedder, "vocabulary", None)
    return frozenset(w for w in vocabulary() if w.isalpha()) if callable(vocabulary) else frozenset()
