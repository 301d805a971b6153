"""What a replica does when another one invalidated cached answers (gateway.events): forget them
from memory only (their rows are gone already), or, after missing events, drop every entry whose
row is gone. A hash embedder stands in for the model: only exact repeats match."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from gateway.cache import CacheConfig, SemanticCache, TenantCachePolicy
from gateway.crud.semantic_cache import CacheRepository
from gateway.db.database import create_db_engine
from gateway.db.migrate import upgrade
from tests.gateway.cache.conftest import ask

pytestmark = pytest.mark.asyncio(loop_scope="session")


class HashEmbedder:
    dim = 16

    def embed_one(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)


@pytest.fixture
def engine(tmp_path):
    url = f"sqlite:///{tmp_path / 'cache.db'}"
    upgrade(url, "heads")
    engine = create_db_engine(url)
    yield engine
    engine.dispose()


@pytest.fixture
def replicas(engine):
    """Two caches over one database, as two gateway replicas have."""
    return [SemanticCache(HashEmbedder(), CacheConfig(), repository=CacheRepository(engine)) for _ in range(2)]


async def _store(cache: SemanticCache, text: str, tenant: str = "t1") -> str:
    return await cache.store(ask(text, tenant=tenant), TenantCachePolicy(), "An answer.", 5, 3, "stop")


async def test_forget_drops_a_tenant_from_memory_only(replicas, engine):
    _, b = replicas
    await _store(b, "How do I reset my password?")
    await _store(b, "Where is my order?", tenant="t2")
    assert await b.forget("t1") == 1
    assert (await b.lookup(ask("How do I reset my password?"), TenantCachePolicy())).status == "miss"
    assert b.stats("t2").entries == 1
    # The rows stay: the replica that invalidated deleted them; forgetting never touches the database.
    assert len(CacheRepository(engine).ids()) == 2


async def test_forget_deleted_drops_what_another_replica_invalidated(replicas):
    a, b = replicas
    kept = await _store(b, "Where is my order?", tenant="t2")
    await _store(b, "How do I reset my password?")
    assert await a.invalidate("t1") == 0  # a held none of them, but deletes the tenant's rows
    assert b.stats("t1").entries == 1  # b missed the event...
    assert await b.forget_deleted() == 1  # ...and catches up from the database
    assert b.stats("t1").entries == 0 and b.stats("t2").entries == 1
    assert (await b.lookup(ask("Where is my order?", tenant="t2"), TenantCachePolicy())).entry_id == kept
    assert await b.forget_deleted() == 0
