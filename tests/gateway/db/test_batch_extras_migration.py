"""0015_batch_extras: usage columns on batches, expires_at on batch files, files_max_bytes on tenants; up and
down on SQLite and PostgreSQL, with no drift from the models."""
from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from gateway.db.base import Base
from gateway.db.database import normalise_url
from gateway.db.migrate import downgrade, upgrade

COLUMNS = {"batches": {"input_tokens", "cached_tokens", "output_tokens"}, "batch_files": {"expires_at"},
           "tenants": {"files_max_bytes"}}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_url(request):
    return request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")


def _columns(url: str) -> dict[str, set[str]]:
    engine = create_engine(normalise_url(url))
    try:
        i = inspect(engine)
        return {t: {c["name"] for c in i.get_columns(t)} for t in COLUMNS}
    finally:
        engine.dispose()


def test_upgrade_adds_them_and_its_revision_alone_comes_down(empty_url):
    upgrade(empty_url)
    assert all(COLUMNS[t] <= cols for t, cols in _columns(empty_url).items())
    downgrade(empty_url, "0015_batch_extras@-1")
    assert not any(COLUMNS[t] & cols for t, cols in _columns(empty_url).items())
    upgrade(empty_url)
    engine = create_engine(normalise_url(empty_url))
    try:
        with engine.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    finally:
        engine.dispose()
    names = {c for cols in COLUMNS.values() for c in cols} | {"ix_batch_files_expires_at"}
    assert [d for d in diffs if any(f"'{n}'" in repr(d) for n in names)] == []
