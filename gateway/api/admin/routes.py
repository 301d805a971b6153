"""Admin: read and change model routes (canary splits, promotions, rollbacks) and their audit log."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict

from gateway.api.admin.auditing import AuditorDep
from gateway.api.deps import AdminDep
from gateway.routing.router import Router
from gateway.services.deps import RouterDep
from gateway.services.routes import apply_change

router = APIRouter(prefix="/admin/routes", tags=["admin"])


class RouteUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Values are checked by the Router so that its errors (naming weights.<version>) reach the client.
    weights: dict[str, Any]
    fallbacks: list[str] | None = None
    stable: str | None = None


class RulesUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Checked by the Router (gateway.routing.rule_spec) so its errors name rules.<i>.<field>.
    rules: list[Any]


class Promotion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: str


@router.get("")
def list_routes(_: AdminDep, routes: RouterDep) -> dict:
    """Every alias' live route with per-version window metrics."""
    return {"object": "list", "data": list(routes.routes_snapshot().values())}


@router.get("/audit")
def audit(_: AdminDep, routes: RouterDep, alias: str | None = None,
          limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict:
    """Route changes, newest first (operators' and automatic rollbacks)."""
    return {"object": "list", "data": [e.to_dict() for e in routes.audit(alias=alias, limit=limit)]}


@router.get("/{alias}")
def get_route(alias: str, _: AdminDep, routes: RouterDep) -> dict:
    """One alias' live route."""
    return apply_change(routes.route, alias)


@router.put("/{alias}")
def set_route(alias: str, body: RouteUpdate, auditor: AuditorDep, routes: RouterDep) -> dict:
    """Replace an alias' weights (sum 100) and optionally its fallbacks."""
    return apply_change(routes.set_weights, alias, body.weights, body.fallbacks, auditor.actor, stable=body.stable,
                  request_id=auditor.request_id)


def _rules_view(routes: Router, alias: str, rules: list[dict]) -> dict:
    return {"object": "route.rules", "alias": alias, "rules": rules, "task_classes": sorted(routes.task_labels)}


@router.get("/{alias}/rules")
def get_rules(alias: str, _: AdminDep, routes: RouterDep) -> dict:
    """An alias' routing rules, in evaluation order (first match wins)."""
    return _rules_view(routes, alias, apply_change(routes.rules, alias))


@router.put("/{alias}/rules")
def set_rules(alias: str, body: RulesUpdate, auditor: AuditorDep, routes: RouterDep) -> dict:
    """Replace an alias' routing rules (an empty list removes them); on every replica."""
    return _rules_view(routes, alias, apply_change(routes.set_rules, alias, body.rules, auditor.actor,
                                             request_id=auditor.request_id))


@router.post("/{alias}/promote")
def promote(alias: str, body: Promotion, auditor: AuditorDep, routes: RouterDep) -> dict:
    """All traffic to one version, which becomes the stable one."""
    return apply_change(routes.promote, alias, body.version, auditor.actor, request_id=auditor.request_id)


@router.post("/{alias}/rollback")
def rollback(alias: str, auditor: AuditorDep, routes: RouterDep) -> dict:
    """Canaries to 0, the stable version to 100."""
    return apply_change(routes.rollback, alias, auditor.actor, request_id=auditor.request_id)
