"""Run the Alembic migrations from code (`tollgate migrate`, tests)."""
from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from gateway.db.database import normalise_url

ROOT = Path(__file__).resolve().parents[2]


def alembic_config(url: str) -> Config:
    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    # '%' is ConfigParser interpolation syntax; URLs carry it in escapes (options=-csearch_path%3D...).
    cfg.set_main_option("sqlalchemy.url", normalise_url(url).replace("%", "%%"))
    cfg.attributes["configure_logging"] = False  # leave the caller's logging alone
    return cfg


def upgrade(url: str, revision: str = "heads") -> None:
    """Every branch to its head: other components add branches off "0001"."""
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(url), revision)
