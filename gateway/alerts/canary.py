"""canary.rolled_back: written by the route store in the transaction that persists an automatic rollback
(gateway.routing.sql_store calls its save hooks there; routing never imports this package)."""
from __future__ import annotations

from sqlalchemy.orm import Session

from gateway.alerts.outbox import emit
from gateway.domain.alert_events import CANARY_ROLLED_BACK, AlertEvent
from gateway.routing.store import AuditEntry

AUTO_ROLLBACK = "auto-rollback"


def rolled_back_versions(entry: AuditEntry) -> list[str]:
    """Versions that had traffic before the change and have none after it."""
    before = (entry.before or {}).get("weights", {})
    after = entry.after.get("weights", {})
    return sorted(v for v, w in before.items() if w > 0 and after.get(v, 0) == 0)


def on_route_saved(session: Session, entry: AuditEntry) -> list[str]:
    """A route store save hook: an automatic rollback becomes a canary.rolled_back event; other changes (an
    operator's) are audited already and alert nobody."""
    if entry.action != AUTO_ROLLBACK:
        return []
    return emit(session.connection(), AlertEvent(CANARY_ROLLED_BACK, {
        "alias": entry.alias, "versions": rolled_back_versions(entry), "reason": entry.reason,
        "weights": entry.after.get("weights", {}), "at": entry.at.isoformat()}))
