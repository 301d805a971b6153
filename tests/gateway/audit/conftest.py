from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import text

from gateway.audit.auditor import Auditor
from gateway.audit.record import Target
from gateway.db.database import Database
from tests.gateway.data_fixtures import database, db_url, pg_url, sqlite_url  # noqa: F401

ALICE = Auditor("admin:alice", request_id="req-1")


def append_n(db: Database, n: int, *, auditor: Auditor = ALICE, action: str = "tenant.update") -> None:
    """n rows, one transaction each."""
    for i in range(n):
        with db.session() as s, s.begin():
            auditor.record(s, action, Target("tenant", f"t{i}"), before={"rpm": i}, after={"rpm": i + 1})


def untriggered(db: Database, *statements: str) -> None:
    """Run SQL on audit_log as a DBA could: without the append-only triggers (dropped first)."""
    drops = {"sqlite": ["DROP TRIGGER IF EXISTS audit_log_no_update", "DROP TRIGGER IF EXISTS audit_log_no_delete"],
             "postgresql": ["DROP TRIGGER IF EXISTS audit_log_no_change ON audit_log"]}[db.dialect]
    with db.engine.begin() as conn:
        for sql in [*drops, *statements]:
            conn.execute(text(sql))


@pytest.fixture
def tamper() -> Callable[..., None]:
    return untriggered
