"""Admin: external upstreams (names, protocol, base_url, health, circuit state) and live changes to them.
A key set here is stored sealed (gateway.security.secret_box) and never appears in a response or the audit log."""
from __future__ import annotations

import asyncio

from fastapi import APIRouter

from gateway.api.admin.auditing import AuditorDep
from gateway.api.deps import AdminDep
from gateway.domain.errors import not_found
from gateway.events.events import UpstreamChanged
from gateway.schemas.upstreams import UpstreamUpdate, UpstreamView
from gateway.services import Services
from gateway.services.deps import ServicesDep

router = APIRouter(prefix="/upstreams", tags=["admin"])


def _views(services: Services) -> list[UpstreamView]:
    live = services.upstreams
    if live is None:
        return []
    served: dict[str, list[str]] = {}
    for v in services.backend.versions():
        if v.upstream is not None:
            served.setdefault(v.upstream, []).append(v.name)
    return [UpstreamView(**s, models=served.get(s["name"], [])) for s in live.status()]


@router.get("")
def list_upstreams(_: AdminDep, services: ServicesDep) -> dict:
    """Every catalogue upstream with its live state."""
    return {"object": "list", "data": [v.model_dump() for v in _views(services)]}


@router.put("/{name}")
async def update_upstream(name: str, body: UpstreamUpdate, auditor: AuditorDep, services: ServicesDep) -> UpstreamView:
    """Override the catalogue's base_url, api_key or timeout_s on every replica; resets health and circuit."""
    live = services.upstreams
    if live is None or name not in live.names():
        raise not_found(f"No upstream `{name}` in the catalogue.")
    key = body.api_key.get_secret_value() if body.api_key is not None else None
    await asyncio.to_thread(live.update, name, base_url=body.base_url, api_key=key, timeout_s=body.timeout_s,
                            auditor=auditor)
    await live.reload(name)
    services.events.publish(UpstreamChanged(name))
    return next(v for v in _views(services) if v.name == name)
