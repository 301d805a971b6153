"""`tollgate serve`: run the gateway under uvicorn (run `tollgate migrate` first: a database behind the code's
migrations is refused at start, rather than failing every request later)."""
from __future__ import annotations

import argparse
import sys

import uvicorn

from sqlalchemy.exc import SQLAlchemyError

from gateway.db.migrate import pending
from gateway.security.admin_key import ensure_admin_key
from gateway.security.metrics_token import ensure_metrics_token
from gateway.security.secret_file import WeakSecret
from gateway.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="run the gateway")
    p.add_argument("--host", help="default: TOLLGATE_HOST")
    p.add_argument("--port", type=int, help="default: TOLLGATE_LISTEN_PORT (8000)")
    p.add_argument("--graceful-timeout", type=float, default=30.0,
                   help="seconds in-flight requests get to finish on shutdown (default 30)")
    p.set_defaults(handler=run)


def check_schema(url: str) -> None:
    """SystemExit when the database lacks migrations this code needs. An unreachable database is let through:
    the gateway starts degraded and serves known keys until it answers (gateway/db/errors.py)."""
    try:
        missing = pending(url)
    except SQLAlchemyError as e:
        print(f"tollgate: could not check the database schema ({type(e).__name__}); starting anyway",
              file=sys.stderr)
        return
    if missing:
        raise SystemExit(f"tollgate: the database is behind this code's migrations (missing {', '.join(missing)}); "
                         "run `tollgate migrate` first")


def proxy_options(settings: Settings) -> dict:
    """uvicorn's trusted proxies: only their forwarded headers name the client (and its scheme)."""
    return {"proxy_headers": True, "forwarded_allow_ips": settings.forwarded_allow_ips}


def run(args: argparse.Namespace) -> int:
    settings = Settings()
    check_schema(settings.resolved_database_url)
    try:
        _, path = ensure_admin_key(settings)
        _, token_path = ensure_metrics_token(settings)
    except WeakSecret as e:
        raise SystemExit(f"tollgate: {e}") from None
    where = f"in {path.resolve()}" if path else "from TOLLGATE_ADMIN_KEY"
    print(f"tollgate: admin key {where}", file=sys.stderr)
    where = f"in {token_path.resolve()}" if token_path else "from TOLLGATE_METRICS_TOKEN"
    print(f"tollgate: /metrics token {where}", file=sys.stderr)
    uvicorn.run("gateway.main:create_app", factory=True, host=args.host or settings.host,
                port=args.port or settings.port, log_level=settings.log_level.lower(),
                timeout_graceful_shutdown=args.graceful_timeout, **proxy_options(settings))
    return 0
