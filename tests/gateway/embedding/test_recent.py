"""RecentEmbeddings: the same text embedded twice in a row costs one forward pass."""
from __future__ import annotations

import numpy as np
import pytest

from gateway.embedding.recent import RecentEmbeddings


class Counting:
    dim = 2

    def __init__(self) -> None:
        self.calls = 0

    def embed_one(self, text: str) -> np.ndarray:
        self.calls += 1
        return np.array([len(text), 1.0], dtype=np.float32)

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.embed_one(t) for t in texts])


def test_a_repeat_is_a_hit_and_the_oldest_is_forgotten():
    inner = Counting()
    recent = RecentEmbeddings(inner, size=2)
    first = recent.embed_one("a")
    first[0] = 99  # a caller changing its copy changes nothing remembered
    assert recent.embed_one("a")[0] == 1 and (inner.calls, recent.hits) == (1, 1)
    recent.embed_one("bb")
    recent.embed_one("ccc")  # "a" was the least recent: forgotten
    recent.embed_one("a")
    assert inner.calls == 4
    assert recent.dim == 2 and recent.embed(["x", "y"]).shape == (2, 2) and inner.calls == 6  # batches pass through
    with pytest.raises(ValueError):
        RecentEmbeddings(inner, size=0)
