"""Route overrides and audit entries in the gateway's database (tables from migration 0002)."""
from __future__ import annotations

from sqlalchemy import select

from gateway.db.database import Database
from gateway.routing.route import Route
from gateway.routing.store import AuditEntry
from gateway.routing.tables import RouteAudit, RouteOverride


class SqlRouteStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def load_routes(self) -> dict[str, Route]:
        with self._db.session() as s:
            rows = s.scalars(select(RouteOverride)).all()
            return {r.alias: Route(r.alias, dict(r.weights), tuple(r.fallbacks), r.stable) for r in rows}

    def save(self, route: Route, entry: AuditEntry) -> None:
        with self._db.session() as s, s.begin():
            row = s.get(RouteOverride, route.alias)
            if row is None:
                row = RouteOverride(alias=route.alias)
                s.add(row)
            row.weights, row.fallbacks, row.stable = dict(route.weights), list(route.fallbacks), route.stable
            row.updated_at, row.updated_by = entry.at, entry.actor
            s.add(RouteAudit(at=entry.at, actor=entry.actor, action=entry.action, alias=entry.alias,
                             before=entry.before, after=entry.after, reason=entry.reason))

    def audit(self, *, alias: str | None = None, limit: int = 100) -> list[AuditEntry]:
        q = select(RouteAudit).order_by(RouteAudit.id.desc()).limit(limit)
        if alias is not None:
            q = q.where(RouteAudit.alias == alias)
        with self._db.session() as s:
            return [AuditEntry(r.actor, r.action, r.alias, r.before, r.after, r.reason, r.at)
                    for r in s.scalars(q).all()]
