"""Migration 0008: the tables as the models declare them, the genesis head, the append-only triggers."""
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.exc import DBAPIError

from gateway.audit.chain import GENESIS
from gateway.audit.table import AuditChainHead, AuditLogRow  # noqa: F401  (registers the tables)
from gateway.db.base import Base
from gateway.db.database import Database, normalise_url
from gateway.db.migrate import downgrade, upgrade

from .conftest import append_n

OURS = {"audit_log", "audit_chain_head"}


def test_upgrade_creates_what_the_models_declare(db_url):
    upgrade(db_url)
    engine = create_engine(normalise_url(db_url))
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        assert [d for d in diff if _mentions(d) & OURS] == []
        assert conn.execute(text("SELECT id, seq, hash FROM audit_chain_head")).all() == [(1, 0, GENESIS)]
    engine.dispose()


def _mentions(diff) -> set[str]:
    """Table names an autogenerate diff item is about."""
    item = diff[0] if isinstance(diff, list) else diff
    names = set()
    for part in item[1:]:
        names.add(part if isinstance(part, str) else getattr(part, "name", None))
        table = getattr(part, "table", None)
        if table is not None:
            names.add(table.name)
    return names


def test_appends_verify_and_the_triggers_hold_after_upgrade(db_url):
    upgrade(db_url)
    db = Database(db_url)
    try:
        append_n(db, 2)
        with pytest.raises(DBAPIError, match="append-only"), db.engine.begin() as conn:
            conn.execute(text("UPDATE audit_log SET actor = 'x' WHERE seq = 1"))
    finally:
        db.dispose()


def test_downgrade_drops_them(db_url):
    upgrade(db_url)
    downgrade(db_url)
    engine = create_engine(normalise_url(db_url))
    assert not OURS & set(inspect(engine).get_table_names())
    engine.dispose()
    upgrade(db_url)  # and back up
