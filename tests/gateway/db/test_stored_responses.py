"""The stored_responses table: its migration up and down on SQLite and PostgreSQL, and no drift from the model."""
from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from gateway.db.base import Base
from gateway.db.database import normalise_url
from gateway.db.migrate import downgrade, upgrade

TABLE = "stored_responses"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_url(request):
    return request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")


def _inspect(url: str, what):
    engine = create_engine(normalise_url(url))
    try:
        return what(inspect(engine))
    finally:
        engine.dispose()


def test_upgrade_creates_it_and_its_revision_alone_comes_down(empty_url):
    upgrade(empty_url)
    assert TABLE in _inspect(empty_url, lambda i: i.get_table_names())
    assert {ix["name"] for ix in _inspect(empty_url, lambda i: i.get_indexes(TABLE))} == {
        "ix_stored_responses_tenant_created"}
    downgrade(empty_url, "0004_responses@-1")  # this branch only, back to 0001
    tables = _inspect(empty_url, lambda i: i.get_table_names())
    assert TABLE not in tables and {"tenants", "usage_ledger", "semantic_cache_entries"} <= set(tables)
    upgrade(empty_url)
    downgrade(empty_url)  # everything
    assert set(_inspect(empty_url, lambda i: i.get_table_names())) <= {"alembic_version"}
    upgrade(empty_url)
    assert TABLE in _inspect(empty_url, lambda i: i.get_table_names())


def test_the_migration_matches_the_model(empty_url):
    upgrade(empty_url)
    engine = create_engine(normalise_url(empty_url))
    try:
        with engine.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    finally:
        engine.dispose()
    assert [d for d in diffs if TABLE in repr(d)] == []
