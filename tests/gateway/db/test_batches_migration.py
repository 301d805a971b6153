"""0006_batches: the Batch API's tables and the ledger's kind column, up and down on SQLite and PostgreSQL,
with no drift from the models."""
from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from gateway.db.base import Base
from gateway.db.database import normalise_url
from gateway.db.migrate import downgrade, upgrade

TABLES = {"batch_files", "batches", "batch_lines"}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_url(request):
    return request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")


def _inspect(url: str, what):
    engine = create_engine(normalise_url(url))
    try:
        return what(inspect(engine))
    finally:
        engine.dispose()


def _ledger_columns(url: str) -> set[str]:
    return {c["name"] for c in _inspect(url, lambda i: i.get_columns("usage_ledger"))}


def test_upgrade_creates_them_and_its_revision_alone_comes_down(empty_url):
    upgrade(empty_url)
    assert set(_inspect(empty_url, lambda i: i.get_table_names())) >= TABLES
    assert "kind" in _ledger_columns(empty_url)
    downgrade(empty_url, "0006_batches@-1")  # this branch only, back to 0001
    tables = set(_inspect(empty_url, lambda i: i.get_table_names()))
    assert not TABLES & tables and {"tenants", "usage_ledger", "stored_responses"} <= tables
    assert "kind" not in _ledger_columns(empty_url)
    upgrade(empty_url)
    assert set(_inspect(empty_url, lambda i: i.get_table_names())) >= TABLES


def test_the_migration_matches_the_models(empty_url):
    upgrade(empty_url)
    engine = create_engine(normalise_url(empty_url))
    try:
        with engine.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    finally:
        engine.dispose()
    ours = [d for d in diffs if any(t in repr(d) for t in (*TABLES, "'kind'"))]
    assert ours == []
