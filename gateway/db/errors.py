"""Which database errors mean "the database cannot be reached right now" (retry later) rather
than "this statement is wrong" (a bug or bad data): the first kind is a 503, spooled or served from
a cache; the second stays an error."""
from __future__ import annotations

from sqlalchemy import exc

# Connection refused or dropped, server shutting down, pool exhausted, SQLite file locked.
_UNAVAILABLE = (exc.OperationalError, exc.InterfaceError, exc.DisconnectionError, exc.TimeoutError)


# SQLite reports a schema the code does not match as an OperationalError too: that is a bug (or a database
# `tollgate migrate` has not reached), never an outage to wait out.
_SCHEMA_MISMATCH = ("no such table", "no such column", "has no column named")


def database_unavailable(error: BaseException) -> bool:
    """True when `error` says the database is down or unreachable, not that the query was bad."""
    if isinstance(error, exc.OperationalError) and any(m in str(error.orig) for m in _SCHEMA_MISMATCH):
        return False
    if isinstance(error, _UNAVAILABLE):
        return True
    return isinstance(error, exc.DBAPIError) and bool(error.connection_invalidated)
