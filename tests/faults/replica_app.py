"""One gateway replica for tests/faults/test_replicas.py, run as `python -m uvicorn
tests.faults.replica_app:create --factory`: configured from the environment as `tollgate serve` is,
with the canned backend (both versions of the chat alias) and a hash embedder, so no model loads
and the semantic cache still works (exact repeats hit). TG_REPLICA_UNAVAILABLE lists versions this
replica cannot serve (to drive an automatic rollback)."""
from __future__ import annotations

import hashlib
import os

import numpy as np
from fastapi import FastAPI

from gateway.main import create_app
from gateway.settings import Settings
from tests.gateway.support import FP32, CannedBackend

BF16 = "smollm2-135m-instruct@bf16"


class HashEmbedder:
    dim = 32

    def embed_one(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.embed_one(t) for t in texts])


def create() -> FastAPI:
    unavailable = {v for v in os.environ.get("TG_REPLICA_UNAVAILABLE", "").split(",") if v}
    backend = CannedBackend(tokens=8, delay_s=0.001, versions=[FP32, BF16], unavailable=unavailable)
    return create_app(Settings(embeddings_enabled=False), backend=backend, embedder=HashEmbedder())
