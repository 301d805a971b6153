"""Where route overrides and the route audit log live: the protocol and an in-memory store."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from gateway.routing.route import Route


@dataclass(frozen=True, slots=True)
class AuditEntry:
    actor: str  # an operator, or "auto-rollback"
    action: str  # "set" | "promote" | "rollback" | "auto-rollback" | "rules"
    alias: str
    before: dict | None
    after: dict
    reason: str | None = None
    at: datetime = field(default_factory=lambda: datetime.now(UTC))
    request_id: str | None = None  # the admin request that made it (None for automatic rollbacks)

    def to_dict(self) -> dict:
        return {"at": self.at.isoformat(), "actor": self.actor, "action": self.action, "alias": self.alias,
                "before": self.before, "after": self.after, "reason": self.reason}


class RouteStore(Protocol):
    def load_routes(self) -> dict[str, Route]:
        """Every persisted override, by alias."""
        ...

    def save(self, route: Route, entry: AuditEntry) -> None:
        """Persist the override and append its audit entry (and, in the database, its row of the general
        audit log, gateway.audit), all or none."""
        ...

    def audit(self, *, alias: str | None = None, limit: int = 100) -> list[AuditEntry]:
        """The newest entries first."""
        ...

    def load_rules(self) -> dict[str, list[dict]]:
        """Every alias' persisted routing rules (their JSON form, gateway.routing.rule_spec)."""
        ...

    def save_rules(self, alias: str, rules: list[dict], entry: AuditEntry) -> None:
        """Replace an alias' rules and append the audit entry, all or none (as `save`)."""
        ...


class MemoryRouteStore:
    """For tests and for a gateway run without a database."""

    def __init__(self) -> None:
        self._routes: dict[str, Route] = {}
        self._audit: list[AuditEntry] = []
        self._rules: dict[str, list[dict]] = {}

    def load_routes(self) -> dict[str, Route]:
        return dict(self._routes)

    def save(self, route: Route, entry: AuditEntry) -> None:
        self._routes[route.alias] = route
        self._audit.append(entry)

    def audit(self, *, alias: str | None = None, limit: int = 100) -> list[AuditEntry]:
        rows = [e for e in reversed(self._audit) if alias is None or e.alias == alias]
        return rows[:limit]

    def load_rules(self) -> dict[str, list[dict]]:
        return {a: list(r) for a, r in self._rules.items()}

    def save_rules(self, alias: str, rules: list[dict], entry: AuditEntry) -> None:
        self._rules[alias] = list(rules)
        self._audit.append(entry)
