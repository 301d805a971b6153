"""Before and after values of the gateway's own rows, and what they are a target of. Secrets never appear:
an API key is its id and prefix (its hash and last use are left out), and no table holds the admin key."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import inspect

from gateway.audit.chain import jsonable
from gateway.audit.record import JSON, Target
from gateway.db.models.api_key import ApiKey
from gateway.db.models.price import Price
from gateway.db.models.reservation import Reservation
from gateway.db.models.tenant import Tenant
from gateway.db.models.version_cost import VersionCost


def _columns(row: Any, *, leave_out: frozenset[str] = frozenset()) -> dict[str, JSON]:
    return {a.key: jsonable(getattr(row, a.key)) for a in inspect(row).mapper.column_attrs
            if a.key not in leave_out}


# type -> (its target, its snapshot). A new audited table is one more entry.
_DESCRIBE: dict[type, Callable[[Any], tuple[Target, dict[str, JSON]]]] = {
    Tenant: lambda t: (Target("tenant", t.id), _columns(t)),
    ApiKey: lambda k: (Target("key", k.id), _columns(k, leave_out=frozenset({"key_hash", "last_used_at"}))),
    Price: lambda p: (Target("price", p.model), _columns(p)),
    VersionCost: lambda c: (Target("version_cost", c.version), _columns(c)),
    Reservation: lambda r: (Target("reservation", r.id), _columns(r)),
}


def describe(row: Any) -> tuple[Target, dict[str, JSON]]:
    """(target, snapshot) of a row of an audited table; TypeError for any other object."""
    how = _DESCRIBE.get(type(row))
    if how is None:
        raise TypeError(f"no audit snapshot for {type(row).__name__}")
    return how(row)


def snapshot(row: Any | None) -> dict[str, JSON] | None:
    return None if row is None else describe(row)[1]
