"""`tollgate audit verify|list`: check the audit log's chain, or read it, straight from the database
(DATABASE_URL, else the SQLite file in the data dir), so it works with the gateway stopped.

    tollgate audit verify          # exit 0 and a summary, or 1 naming the first broken seq
    tollgate audit list --action 'tenant.*' --limit 20
"""
from __future__ import annotations

import argparse
import json
import sys

from sqlalchemy.exc import SQLAlchemyError

from gateway.audit.query import MAX_LIMIT, AuditQuery, list_records
from gateway.audit.verify import verify
from gateway.db.database import Database
from gateway.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `audit` sub-command to the tollgate console."""
    p = subparsers.add_parser("audit", help="verify or read the audit log of admin actions")
    sub = p.add_subparsers(dest="audit_command", required=True)
    sub.add_parser("verify", help="check every row's hash and link; non-zero exit on the first broken row")
    ls = sub.add_parser("list", help="audit rows as JSON lines, newest first")
    ls.add_argument("--actor")
    ls.add_argument("--action", help="exact, or a prefix as 'tenant.*'")
    ls.add_argument("--limit", type=int, default=50, help=f"1-{MAX_LIMIT}")
    p.set_defaults(handler=run)


def _verify(database: Database) -> int:
    with database.session() as session:
        verdict = verify(session)
    print(verdict.summary(), file=sys.stdout if verdict.ok else sys.stderr)
    return 0 if verdict.ok else 1


def _list(database: Database, args: argparse.Namespace) -> int:
    try:
        query = AuditQuery(actor=args.actor, action=args.action, limit=args.limit)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with database.session() as session:
        for record in list_records(session, query).data:
            print(json.dumps(record.to_dict()))
    return 0


def run(args: argparse.Namespace, settings: Settings | None = None) -> int:
    settings = settings or Settings()
    database = Database(settings.resolved_database_url)
    try:
        if args.audit_command == "verify":
            return _verify(database)
        return _list(database, args)
    except SQLAlchemyError as e:  # unreachable, or not migrated (`tollgate migrate` creates the tables)
        print(f"error: cannot read the audit log: {type(e).__name__}: {getattr(e, 'orig', e)}", file=sys.stderr)
        return 2
    finally:
        database.dispose()
