"""Run the Alembic migrations from code (`tollgate migrate`, tests)."""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from gateway.db.database import normalise_url


def scripts_dir() -> Path:
    """The migration scripts: package data of gateway.db (in a checkout, a link onto the top-level migrations/),
    so an installed gateway finds them wherever it is installed."""
    return Path(str(files("gateway.db") / "migrations")).resolve()


def alembic_config(url: str) -> Config:
    cfg = Config()  # no alembic.ini: that file is for `alembic` run by hand from a checkout
    cfg.set_main_option("script_location", str(scripts_dir()))
    cfg.set_main_option("path_separator", "os")
    # '%' is ConfigParser interpolation syntax; URLs carry it in escapes (options=-csearch_path%3D...).
    cfg.set_main_option("sqlalchemy.url", normalise_url(url).replace("%", "%%"))
    cfg.attributes["configure_logging"] = False  # leave the caller's logging alone
    return cfg


def upgrade(url: str, revision: str = "heads") -> None:
    """Every branch to its head: other components add branches off "0001"."""
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(url), revision)


def pending(url: str) -> list[str]:
    """Head revisions the database has not reached (every branch's head), sorted; [] when it is current.
    Raises SQLAlchemy's errors when the database cannot be reached."""
    script = ScriptDirectory.from_config(alembic_config(url))
    engine = create_engine(normalise_url(url))
    try:
        with engine.connect() as conn:
            current = set(MigrationContext.configure(conn).get_current_heads())
    finally:
        engine.dispose()
    return sorted(set(script.get_heads()) - _applied(script, current))


def _as_tuple(value) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _applied(script: ScriptDirectory, current: set[str]) -> set[str]:
    """Every revision the database has: its version table's heads and all they rest on, through down-revisions
    and `depends_on` alike (a branch head another branch depends on leaves the version table once that one
    is applied, though it is still a head of the scripts)."""
    seen: set[str] = set()
    todo = list(current)
    while todo:
        rev = todo.pop()
        if rev in seen:
            continue
        seen.add(rev)
        sc = script.get_revision(rev)
        if sc is not None:
            todo += [*_as_tuple(sc.down_revision), *_as_tuple(sc.dependencies)]
    return seen
