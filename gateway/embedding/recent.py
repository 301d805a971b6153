"""An embedder that remembers its last few single-text vectors.

Admission classifies a request's last user message for the routing rules before the semantic cache looks the
same text up; with this in front of the shared embedder, the second embedding of that text is a dictionary
hit instead of a forward pass. Batches (/v1/embeddings) pass straight through."""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np


class RecentEmbeddings:
    def __init__(self, inner, size: int = 256) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self._inner, self._size = inner, size
        self._recent: OrderedDict[bytes, np.ndarray] = OrderedDict()  # digest of the text -> [dim]
        self._lock = threading.Lock()
        self.hits = 0

    def embed_one(self, text: str) -> np.ndarray:
        key = hashlib.blake2b(text.encode(), digest_size=16).digest()  # bounded keys, whatever the text's size
        with self._lock:
            vector = self._recent.get(key)
            if vector is not None:
                self._recent.move_to_end(key)
                self.hits += 1
                return vector.copy()  # callers may keep or change theirs
        vector = self._inner.embed_one(text)  # outside the lock: the slow part
        with self._lock:
            self._recent[key] = vector.copy()
            while len(self._recent) > self._size:
                self._recent.popitem(last=False)
        return vector

    def __getattr__(self, name: str):
        return getattr(self._inner, name)  # dim, embed, count_tokens, model_name: the wrapped embedder's
