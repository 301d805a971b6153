"""`Database(url)`: one engine and one sessionmaker for the gateway's tables."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool


def normalise_url(url: str) -> str:
    """`postgresql://` / `postgres://` -> psycopg 3, the driver we ship."""
    for plain in ("postgresql://", "postgres://"):
        if url.startswith(plain):
            return "postgresql+psycopg://" + url[len(plain):]
    return url


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=5000")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def create_db_engine(url: str, *, echo: bool = False) -> Engine:
    url = normalise_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        # A server that silently drops packets must fail a connection attempt in seconds, not after TCP's
        # own minutes: the gateway's outage paths (auth grace, ledger spool, 503s) depend on hearing back.
        connect = {"connect_timeout": 3} if parsed.get_backend_name() == "postgresql" else {}
        return create_engine(url, echo=echo, pool_pre_ping=True, connect_args=connect)
    memory = parsed.database in (None, "", ":memory:")
    if not memory:
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    # The ledger writes from worker threads, so connections cross threads.
    extra = {"poolclass": StaticPool} if memory else {}
    engine = create_engine(url, echo=echo, connect_args={"check_same_thread": False}, **extra)
    event.listen(engine, "connect", _sqlite_pragmas)
    return engine


class Database:
    def __init__(self, url: str, *, echo: bool = False) -> None:
        self.url = normalise_url(url)
        self.engine = create_db_engine(self.url, echo=echo)
        self.sessionmaker = sessionmaker(self.engine, expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session; CRUD functions commit their own work, anything left is rolled back."""
        with self.sessionmaker() as session:
            yield session

    def dispose(self) -> None:
        self.engine.dispose()
