"""version.unhealthy: a version the backend reports without a ready replica. Once per outage: a mark per
(pool, version) while it is down, removed at the first check that finds it healthy again (re-armed). Gateways
sharing a pool share its marks, so one of them alerts."""
from __future__ import annotations

from sqlalchemy import Connection

from gateway.alerts.marks import mark_once, unmark
from gateway.alerts.outbox import emit
from gateway.domain.alert_events import VERSION_UNHEALTHY, AlertEvent

DOWN = "down"


def check_versions(conn: Connection, health: dict[str, bool], *, pool: str) -> list[str]:
    """`health`: version -> has a ready replica (ModelBackend.health). Returns the delivery ids written."""
    out: list[str] = []
    for version, healthy in sorted(health.items()):
        subject = f"{pool}/{version}" if pool else version
        if healthy:
            unmark(conn, kind=VERSION_UNHEALTHY, subject=subject, period=DOWN)
        elif mark_once(conn, kind=VERSION_UNHEALTHY, subject=subject, period=DOWN):
            out += emit(conn, AlertEvent(VERSION_UNHEALTHY, {"version": version, "pool": pool or None}))
    return out
