"""`tollgate migrate [--down]`: bring the database to every head (or back to base)."""
from __future__ import annotations

import argparse
import sys

from gateway.db import migrate as migrations
from gateway.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("migrate", help="apply database migrations (DATABASE_URL or the SQLite file)")
    p.add_argument("--down", action="store_true", help="downgrade to base: drops every gateway table")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    url = Settings().resolved_database_url
    if args.down:
        migrations.downgrade(url)
        print("database downgraded to base", file=sys.stderr)
    else:
        migrations.upgrade(url)
        print("database upgraded to heads", file=sys.stderr)
    return 0
