"""What one admitted request holds against the limits until it is settled."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

SHARED, LOCAL = "shared", "local"  # which store holds a reservation's counts


# eq=False: identity, so open reservations can sit in a WeakSet (gone when the request is).
@dataclass(slots=True, eq=False, weakref_slot=True)
class Reservation:
    token_keys: list[str]  # TPM counters charged `tokens`
    tokens: int
    budget_key: str | None
    budget_granted: int  # may be less than `tokens` for a stream metered as it flows
    budget_limit: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    settled: bool = False
    store: str = SHARED  # where it was counted, so where it is extended and settled
    tenant_id: str = ""
    month_start: datetime | None = None  # the budget's month
    # A local reservation still open when Redis came back: the shared budget counter was set to hold
    # this much of it (its worst case); settling tells the shared counter what it really used.
    carried: int = 0

    @property
    def budget_limited(self) -> bool:
        return self.budget_key is not None
