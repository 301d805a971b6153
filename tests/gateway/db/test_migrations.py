import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from gateway.db.base import Base
from gateway.db.database import normalise_url
from gateway.db.migrate import downgrade, upgrade

OURS = {"tenants", "api_keys", "prices", "usage_ledger", "version_costs", "replica_minutes", "prompt_prefixes"}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_url(request):
    return request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")


def _tables(url: str) -> set[str]:
    engine = create_engine(normalise_url(url))
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_upgrade_heads_then_downgrade_base(empty_url):
    upgrade(empty_url)
    assert _tables(empty_url) >= OURS
    upgrade(empty_url)  # already at heads: a no-op
    downgrade(empty_url)
    assert _tables(empty_url) <= {"alembic_version"}
    upgrade(empty_url)  # and back up again
    assert _tables(empty_url) >= OURS


def test_plain_postgresql_url_is_accepted(pg_url):
    upgrade(pg_url.replace("postgresql+psycopg://", "postgresql://"))
    assert _tables(pg_url) >= OURS


def test_migration_matches_the_models(empty_url):
    """What 0001 creates is what the table models declare (no drift between the two)."""
    upgrade(empty_url)
    engine = create_engine(normalise_url(empty_url))
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": False})
        diff = [d for d in compare_metadata(ctx, Base.metadata) if _table_of(d) in OURS]
    engine.dispose()
    assert diff == []


def _table_of(diff) -> str | None:
    item = diff[0] if isinstance(diff, list) else diff
    for part in item[1:]:
        name = getattr(part, "name", None) if not isinstance(part, str) else None
        table = getattr(part, "table", None)
        if table is not None:
            return table.name
        if name in OURS:
            return name
        if isinstance(part, str) and part in OURS:
            return part
    return None
