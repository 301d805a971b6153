"""Alert work rides in another component's transaction (a ledger flush, a route change) inside a savepoint, so
an alert that fails never costs the change it follows: that change commits, and the failure is logged."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection

log = logging.getLogger(__name__)


def in_savepoint(conn: Connection, what: str, work: Callable[..., list[str]], *args: Any) -> list[str]:
    try:
        with conn.begin_nested():
            return work(conn, *args)
    except Exception:
        log.exception("alerts: %s failed; the change it follows stands without its alert", what)
        return []
