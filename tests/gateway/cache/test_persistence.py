"""Entries survive a restart through SQL (SQLite and PostgreSQL); corrupt rows are skipped and logged."""
import json
import logging

import numpy as np
import pytest
from sqlalchemy import delete, inspect, select, update

from gateway.cache import TenantCachePolicy
from gateway.crud.semantic_cache import CacheRepository
from gateway.db.models.semantic_cache_entry import SemanticCacheEntryRow
from gateway.db.database import create_db_engine
from gateway.db.migrate import upgrade
from tests.gateway.cache.conftest import ask
from tests.gateway.data_fixtures import fresh_pg_schema

@pytest.fixture(scope="module")
def sqlite_url(tmp_path_factory):
    return f"sqlite:///{tmp_path_factory.mktemp('cache') / 'cache.db'}"


@pytest.fixture(scope="module")
def pg_url():
    """A fresh schema on the test server, dropped afterwards with everything in it."""
    with fresh_pg_schema("cache") as url:
        yield url


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def migrated(request):
    """An engine on a database migrated to every head (0001, 0002, 0003...), once per backend."""
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    upgrade(url, "heads")
    engine = create_db_engine(url)
    yield engine
    engine.dispose()


@pytest.fixture
def engine(migrated):
    yield migrated
    with migrated.begin() as conn:
        conn.execute(delete(SemanticCacheEntryRow))


@pytest.fixture
def repository(engine):
    return CacheRepository(engine)


def test_migration_creates_the_table(engine):
    columns = {c["name"] for c in inspect(engine).get_columns("semantic_cache_entries")}
    assert {"id", "tenant_id", "namespace", "exact_key", "payload", "vector", "dim", "expires_at"} <= columns


async def test_round_trip_reindexes_at_start(make_cache, repository, policy):
    first = make_cache(repository=repository)
    entry_id = await first.store(ask("What is the capital of France?"), policy, "Paris.", 12, 3, "stop")
    await first.store(ask("What is the capital of France?", tenant="t2"), policy, "Paris, France.", 12, 4, "stop")

    restarted = make_cache(repository=repository)
    assert await restarted.load() == 2
    hit = await restarted.lookup(ask("What's the capital city of France?"), policy)
    assert (hit.status, hit.tier, hit.entry_id, hit.entry.text) == ("hit", "semantic", entry_id, "Paris.")
    assert hit.entry.prompt_tokens == 12 and hit.entry.completion_tokens == 3
    found = await restarted.lookup(ask("What is the capital of France?", tenant="t2"), policy)
    assert found.entry.text == "Paris, France."


async def test_invalidation_and_eviction_reach_the_table(make_cache, repository, engine):
    capped = TenantCachePolicy(max_entries=1)
    cache = make_cache(repository=repository)
    await cache.store(ask("How do I reset my password?"), capped, "Use the link.", 5, 3, "stop")
    kept = await cache.store(ask("How do I track my order?"), capped, "Open Orders.", 5, 3, "stop")
    await cache.store(ask("Do you ship to Canada?", tenant="t2"), capped, "Yes.", 5, 1, "stop")
    with engine.connect() as conn:
        ids = set(conn.execute(select(SemanticCacheEntryRow.id)).scalars())
    assert kept in ids and len(ids) == 2  # the evicted row is gone
    await cache.invalidate("t1", kept)
    await cache.invalidate("t2")
    with engine.connect() as conn:
        assert conn.execute(select(SemanticCacheEntryRow.id)).first() is None


async def test_expired_rows_are_not_loaded(make_cache, repository, clock):
    cache = make_cache(repository=repository)
    await cache.store(ask("How do I reset my password?"), TenantCachePolicy(ttl_s=10), "Link.", 5, 1, "stop")
    clock.now += 11
    restarted = make_cache(repository=repository)
    assert await restarted.load() == 0


def _corrupt(engine, entry_id: str, **values) -> None:
    with engine.begin() as conn:
        conn.execute(update(SemanticCacheEntryRow).where(SemanticCacheEntryRow.id == entry_id).values(**values))


async def test_a_cut_answer_and_earlier_turns_survive_a_restart(make_cache, repository, policy):
    history = [{"role": "user", "content": "I'm planning a trip to Kyoto."}, {"role": "assistant", "content": "Nice!"}]
    first = make_cache(repository=repository)
    await first.store(ask("Where should I stay?", history=history, max_tokens=3), policy, "Stay in Gion.", 20, 3,
                      "length", (4, 7, 13))
    restarted = make_cache(repository=repository)
    await restarted.load()
    hit = await restarted.lookup(ask("Where should I stay?", history=history, max_tokens=2), policy)
    assert (hit.status, hit.entry.text, hit.entry.finish_reason) == ("hit", "Stay in", "length")
    elsewhere = [{"role": "user", "content": "I'm planning a trip to Osaka."}, history[1]]
    found = await restarted.lookup(ask("Where should I stay?", history=elsewhere, max_tokens=2), policy)
    assert found.status == "miss"


def _payload(**overrides) -> bytes:
    body = {"question": "q?", "text": "a", "prompt_tokens": 1, "completion_tokens": 1, "finish_reason": "stop"}
    body.update(overrides)
    return json.dumps(body).encode()


CORRUPTIONS = {
    "bad json": dict(payload=b"{not json"),
    "bad utf-8": dict(payload=b"\xff\xfe\xfa{"),
    "not an object": dict(payload=b"[1, 2]"),
    "missing text": dict(payload=_payload(text=None)),
    "negative tokens": dict(payload=_payload(prompt_tokens=-3)),
    "truncated answer": dict(payload=_payload(finish_reason="length")),  # without the limit it was cut at
    "token ends": dict(payload=_payload(token_ends=[5])),  # past the end of the text
    "short vector": dict(vector=np.ones(10, dtype="<f4").tobytes()),
    "wrong dim": dict(dim=12),
    "not unit length": dict(vector=(np.ones(384, dtype="<f4") * 3).tobytes()),
    "nan vector": dict(vector=np.full(384, np.nan, dtype="<f4").tobytes()),
}


@pytest.mark.parametrize("kind", list(CORRUPTIONS))
async def test_corrupt_rows_are_skipped_and_logged(make_cache, repository, engine, policy, caplog, kind):
    cache = make_cache(repository=repository)
    bad = await cache.store(ask("What is the capital of France?"), policy, "Paris.", 12, 3, "stop")
    await cache.store(ask("How do I reset my password?"), policy, "Use the link.", 5, 3, "stop")
    _corrupt(engine, bad, **CORRUPTIONS[kind])

    restarted = make_cache(repository=repository)
    with caplog.at_level(logging.WARNING, logger="gateway.crud.semantic_cache"):
        assert await restarted.load() == 1
    assert any(bad in r.getMessage() and "corrupt" in r.getMessage() for r in caplog.records)
    assert (await restarted.lookup(ask("What is the capital of France?"), policy)).status == "miss"
    assert (await restarted.lookup(ask("How do I reset my password?"), policy)).status == "hit"


async def test_an_entry_expiring_at_lookup_leaves_the_table(make_cache, repository, engine, clock):
    cache = make_cache(repository=repository)
    short = TenantCachePolicy(ttl_s=10)
    await cache.store(ask("How do I reset my password?"), short, "Link.", 5, 1, "stop")
    clock.now += 11
    assert (await cache.lookup(ask("How do I reset my password?"), short)).status == "miss"
    with engine.connect() as conn:
        assert conn.execute(select(SemanticCacheEntryRow.id)).first() is None


def test_the_table_model_matches_the_migration(engine):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from gateway.db.base import Base

    with engine.connect() as conn:
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert [d for d in diffs if "semantic_cache_entries" in repr(d)] == []
