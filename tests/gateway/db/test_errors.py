"""An outage is told apart from a statement the schema cannot run."""
from __future__ import annotations

import sqlite3

from sqlalchemy import exc

from gateway.db.errors import database_unavailable


def _operational(message: str) -> exc.OperationalError:
    return exc.OperationalError("SELECT 1", {}, sqlite3.OperationalError(message))


def test_a_locked_or_unreachable_database_is_an_outage():
    assert database_unavailable(_operational("database is locked"))
    assert database_unavailable(_operational("could not connect to server: Connection refused"))


def test_a_schema_behind_the_code_is_not_an_outage():
    assert not database_unavailable(_operational("no such column: tenants.priority"))
    assert not database_unavailable(_operational("no such table: stored_responses"))
    assert not database_unavailable(exc.ProgrammingError("SELECT 1", {}, Exception("column does not exist")))
