"""What one replica tells the others: plain data, and its wire form (JSON).

Each event names what changed, never the new state: a receiver re-reads the database (routes) or
drops what it holds (cached keys, cached answers), so a late or repeated event is harmless."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True, slots=True)
class RouteChanged:
    alias: str  # its override was written (an operator, or an automatic rollback)


@dataclass(frozen=True, slots=True)
class CacheInvalidated:
    tenant_id: str
    entry_id: str | None = None  # None: every cached answer of the tenant


@dataclass(frozen=True, slots=True)
class TenantChanged:
    tenant_id: str  # status, limits or cache settings


@dataclass(frozen=True, slots=True)
class KeyRevoked:
    key_id: str


@dataclass(frozen=True, slots=True)
class UpstreamChanged:
    name: str  # its override was written (PUT /admin/upstreams/{name})


@dataclass(frozen=True, slots=True)
class SessionRevoked:
    sid: str  # a console session signed out: refused on every replica
    until: float  # Unix seconds: when it expires anyway (then it need not be remembered)


@dataclass(frozen=True, slots=True)
class Resync:
    """Rebuild everything from the database: sent when events were dropped (a full outbox)."""


Event = RouteChanged | CacheInvalidated | TenantChanged | KeyRevoked | SessionRevoked | UpstreamChanged | Resync

KINDS: dict[str, type] = {"route_changed": RouteChanged, "cache_invalidated": CacheInvalidated,
                          "tenant_changed": TenantChanged, "key_revoked": KeyRevoked,
                          "session_revoked": SessionRevoked, "upstream_changed": UpstreamChanged, "resync": Resync}
_KIND_OF = {cls: kind for kind, cls in KINDS.items()}


class BadEvent(ValueError):
    """A message that is not an event this gateway knows (another version's, or garbage)."""


def encode(event: Event, origin: str) -> str:
    """`origin` is the publishing replica, which has applied the change already."""
    return json.dumps({"origin": origin, "kind": _KIND_OF[type(event)], "data": asdict(event)},
                      separators=(",", ":"))


def decode(body: dict) -> tuple[Event, str]:
    """(event, origin) from an encoded event's parsed JSON; BadEvent if it is not one."""
    try:
        cls = KINDS[body["kind"]]
        return cls(**body["data"]), str(body["origin"])
    except (KeyError, TypeError) as e:
        raise BadEvent(f"not an event: {body!r:.200}") from e
