"""`tollgate migrate [--down]`: bring the database to every head (or back to base), then give
every catalogue model without a price its catalogue price (the gateway refuses unpriced models), and every
version without a replica-hour price its catalogue `cost:` (MaaS economics)."""
from __future__ import annotations

import argparse
import sys

from sqlalchemy.engine import make_url

from gateway.audit.auditor import Auditor
from gateway.billing.prices import seed_prices_from_catalogue
from gateway.catalogue import load_catalogue
from gateway.db import migrate as migrations
from gateway.db.database import Database
from gateway.economics.costs import seed_version_costs_from_catalogue
from gateway.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("migrate", help="apply database migrations (DATABASE_URL or the SQLite file)")
    p.add_argument("--down", action="store_true", help="downgrade to base: drops every gateway table")
    p.set_defaults(handler=run)


def migrate_actor(url: str) -> str:
    """Who seeded prices, for the audit log: no admin key is involved, so the database credential that
    wrote them ("migrate:postgres"; "migrate:local" for a SQLite file)."""
    return f"migrate:{make_url(url).username or 'local'}"


def run(args: argparse.Namespace) -> int:
    settings = Settings()
    url = settings.resolved_database_url
    if args.down:
        migrations.downgrade(url)
        print("database downgraded to base", file=sys.stderr)
        return 0
    migrations.upgrade(url)
    print("database upgraded to heads", file=sys.stderr)
    database = Database(url)
    try:
        catalogue = load_catalogue(settings.catalogue)
        with database.session() as session:
            auditor = Auditor(migrate_actor(url))
            seeded = seed_prices_from_catalogue(session, catalogue, auditor=auditor)
            costed = seed_version_costs_from_catalogue(session, catalogue, auditor=auditor)
    finally:
        database.dispose()
    if seeded:
        print(f"catalogue prices seeded for: {', '.join(seeded)}", file=sys.stderr)
    if costed:
        print(f"catalogue replica-hour prices seeded for: {', '.join(costed)}", file=sys.stderr)
    return 0
