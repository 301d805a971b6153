"""Alembic environment. The URL: `sqlalchemy.url` if the caller set it, else Settings."""
from __future__ import annotations

from logging.config import fileConfig

from alembic import context
# Only autogenerate reads target_metadata (upgrade/downgrade never do): import a component's
# table module here before autogenerating, or its tables look like ones to drop.
import gateway.db.models  # noqa: F401
from gateway.db.base import Base
from gateway.db.database import create_db_engine, normalise_url
from gateway.settings import Settings

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logging", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def _url() -> str:
    return normalise_url(config.get_main_option("sqlalchemy.url") or Settings().resolved_database_url)


def _configure(*, sqlite: bool, **kw) -> None:
    # SQLite cannot ALTER most things in place: batch mode copies the table.
    context.configure(target_metadata=Base.metadata, render_as_batch=sqlite, **kw)


def run_offline() -> None:
    url = _url()
    _configure(sqlite=url.startswith("sqlite"), url=url, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    engine = create_db_engine(_url())
    with engine.connect() as connection:
        _configure(sqlite=connection.dialect.name == "sqlite", connection=connection)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
