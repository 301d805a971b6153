"""A tenant's guardrail rules: read them, replace them (with the audit row in the same transaction)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from gateway.db.models.guardrail import TenantGuardrails

# Called with the session, the rules before and after, just before the commit.
GuardrailsAudit = Callable[[Session, list[dict[str, Any]], list[dict[str, Any]]], None]


def get_rules(session: Session, *, tenant_id: str) -> list[dict[str, Any]]:
    row = session.get(TenantGuardrails, tenant_id)
    return list(row.rules) if row is not None else []


def set_rules(session: Session, *, tenant_id: str, rules: list[dict[str, Any]],
              audit: GuardrailsAudit | None = None) -> list[dict[str, Any]]:
    """Replace the tenant's rules (an empty list removes them all)."""
    row = session.get(TenantGuardrails, tenant_id)
    before = list(row.rules) if row is not None else []
    if row is None:
        row = TenantGuardrails(tenant_id=tenant_id, rules=rules)
        session.add(row)
    else:
        row.rules = rules
    session.flush()
    if audit is not None:
        audit(session, before, rules)
    session.commit()
    return rules
