"""Route overrides, routing rules and audit entries in the gateway's database (migrations 0002, 0008, 0014)."""
from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.audit.record import Change, Target
from gateway.audit.writer import append
from gateway.db.database import Database
from gateway.db.models.route_rules import RouteRules
from gateway.routing.route import Route
from gateway.routing.store import AuditEntry
from gateway.routing.tables import RouteAudit, RouteOverride

# The route log's actions, as the general audit log (gateway.audit) names them.
AUDIT_ACTIONS = {"set": "route.update", "promote": "route.promote", "rollback": "route.rollback",
                 "auto-rollback": "route.auto_rollback", "rules": "route.set_rules"}


def audit_change(entry: AuditEntry) -> Change:
    """The general audit log's row for a route change; an automatic rollback's reason goes in `after`."""
    after = entry.after if entry.reason is None else {**entry.after, "reason": entry.reason}
    return Change(entry.actor, AUDIT_ACTIONS[entry.action], Target("route", entry.alias), entry.request_id,
                  entry.before, after)


class SqlRouteStore:
    def __init__(self, db: Database, *, on_save: Callable[[Session, AuditEntry], object] | None = None) -> None:
        """`on_save(session, entry)` runs in the transaction that persists each change (the alerts' outbox
        writes a canary rollback there, gateway.alerts.canary); routing knows nothing of what it does."""
        self._db = db
        self._on_save = on_save

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
            self._log(s, entry)

    def _log(self, s, entry: AuditEntry) -> None:
        s.add(RouteAudit(at=entry.at, actor=entry.actor, action=entry.action, alias=entry.alias,
                         before=entry.before, after=entry.after, reason=entry.reason))
        if self._on_save is not None:
            self._on_save(s, entry)
        s.flush()  # the audit append last: the chain head stays locked only until the commit
        append(s, audit_change(entry))

    def load_rules(self) -> dict[str, list[dict]]:
        with self._db.session() as s:
            return {r.alias: list(r.rules) for r in s.scalars(select(RouteRules)).all()}

    def save_rules(self, alias: str, rules: list[dict], entry: AuditEntry) -> None:
        with self._db.session() as s, s.begin():
            row = s.get(RouteRules, alias)
            if row is None:
                row = RouteRules(alias=alias)
                s.add(row)
            row.rules, row.updated_at, row.updated_by = list(rules), entry.at, entry.actor
            self._log(s, entry)

    def audit(self, *, alias: str | None = None, limit: int = 100) -> list[AuditEntry]:
        q = select(RouteAudit).order_by(RouteAudit.id.desc()).limit(limit)
        if alias is not None:
            q = q.where(RouteAudit.alias == alias)
        with self._db.session() as s:
            return [AuditEntry(r.actor, r.action, r.alias, r.before, r.after, r.reason, r.at)
                    for r in s.scalars(q).all()]
