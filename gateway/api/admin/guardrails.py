"""Admin: a tenant's guardrail rules (gateway.guardrails), replaced as a whole and audited."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body

from gateway.api.admin.auditing import AuditorDep
from gateway.audit.record import Target
from gateway.crud.guardrails import get_rules, set_rules
from gateway.crud.keys import get_key
from gateway.domain.errors import invalid_request
from gateway.guardrails.errors import RuleError
from gateway.guardrails.rules import Rule, parse_rules
from gateway.services.deps import ServicesDep, SessionDep
from gateway.services.tenants import tenant_or_404

router = APIRouter()


def _out(tenant_id: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"object": "guardrails", "tenant_id": tenant_id, "rules": rules}


@router.get("/tenants/{tenant_id}/guardrails")
def read(tenant_id: str, session: SessionDep) -> dict[str, Any]:
    """The tenant's rules, as saved."""
    tenant_or_404(session, tenant_id)
    return _out(tenant_id, get_rules(session, tenant_id=tenant_id))


@router.put("/tenants/{tenant_id}/guardrails")
def put(tenant_id: str, body: Annotated[Any, Body()], session: SessionDep, services: ServicesDep,
        auditor: AuditorDep) -> dict[str, Any]:
    """Replace the tenant's rules (a list, or {"rules": [...]}; [] removes them). In force at once on this
    replica, within the store's TTL (2 s) on the others."""
    tenant_or_404(session, tenant_id)
    try:
        rules = parse_rules(body)
    except RuleError as e:
        raise invalid_request(str(e), param=e.param) from None
    _check_keys(session, tenant_id, rules)
    saved = [r.to_dict() for r in rules]

    def audit(s, before, after) -> None:
        auditor.record(s, "guardrails.set", Target("guardrails", tenant_id), before=before, after=after)
    set_rules(session, tenant_id=tenant_id, rules=saved, audit=audit)
    store = getattr(services, "guardrails", None)
    if store is not None:
        store.invalidate(tenant_id)
    return _out(tenant_id, saved)


def _check_keys(session, tenant_id: str, rules: list[Rule]) -> None:
    """A rule scoped to a key must name one of this tenant's keys."""
    for i, rule in enumerate(rules):
        if rule.key_id is not None:
            key = get_key(session, key_id=rule.key_id)
            if key is None or key.tenant_id != tenant_id:
                raise invalid_request(f"No key {rule.key_id!r} belongs to this tenant.", param=f"rules[{i}].key_id")
