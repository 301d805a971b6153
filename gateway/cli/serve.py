"""`tollgate serve`: run the gateway under uvicorn (run `tollgate migrate` first)."""
from __future__ import annotations

import argparse
import sys

import uvicorn

from gateway.security.admin_key import ensure_admin_key
from gateway.security.metrics_token import ensure_metrics_token
from gateway.security.secret_file import WeakSecret
from gateway.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="run the gateway")
    p.add_argument("--host", help="default: TOLLGATE_HOST")
    p.add_argument("--port", type=int, help="default: TOLLGATE_PORT")
    p.add_argument("--graceful-timeout", type=float, default=30.0,
                   help="seconds in-flight requests get to finish on shutdown (default 30)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    settings = Settings()
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
                timeout_graceful_shutdown=args.graceful_timeout)
    return 0
