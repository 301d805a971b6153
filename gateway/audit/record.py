"""What an audit row holds: a change someone made (`Change`) and, once appended, its sealed `AuditRecord`."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

# JSON-safe values only (dicts with str keys, lists, str, int, float, bool, None): what is stored is what
# is hashed, byte for byte (see gateway.audit.chain.jsonable).
JSON = Any


@dataclass(frozen=True, slots=True)
class Target:
    """What an action was done to: ("tenant", id), ("key", id), ("price", model), ("route", alias)..."""
    type: str
    id: str

    def __post_init__(self) -> None:
        if not self.type or not isinstance(self.id, str):
            raise ValueError(f"a target needs a type and a string id, got {self.type!r}, {self.id!r}")


@dataclass(frozen=True, slots=True)
class Change:
    """One admin action as its caller describes it; `append` gives it its place in the chain."""
    actor: str  # from the credential that authorised it, never from the client's say-so
    action: str  # "<noun>.<verb>": tenant.create, key.revoke, price.set, route.update, cache.invalidate
    target: Target
    request_id: str | None = None
    before: JSON = None  # None: the target did not exist (a create)
    after: JSON = None

    def __post_init__(self) -> None:
        if not self.actor:
            raise ValueError("an audited change needs an actor")
        noun, dot, verb = self.action.partition(".")
        if not (noun and dot and verb):
            raise ValueError(f"action must read <noun>.<verb>, got {self.action!r}")


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One row of the chain: `hash` seals every other field and `prev_hash` (the row before's hash)."""
    seq: int
    at: datetime  # UTC, microseconds
    actor: str
    action: str
    target_type: str
    target_id: str
    request_id: str | None
    before: JSON
    after: JSON
    prev_hash: str
    hash: str

    def to_dict(self) -> dict[str, Any]:
        return {"object": "audit.entry", "seq": self.seq, "at": self.at.isoformat(), "actor": self.actor,
                "action": self.action, "target": {"type": self.target_type, "id": self.target_id},
                "request_id": self.request_id, "before": self.before, "after": self.after,
                "prev_hash": self.prev_hash, "hash": self.hash}
