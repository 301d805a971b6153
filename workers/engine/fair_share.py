"""Per-tenant service counters: the virtual token counter (VTC; Sheng et al., "Fairness in Serving Large
Language Models", OSDI 2024).

Each tenant's counter is the weighted service it has received: a prefill token costs `prefill_weight`, a
generated token `decode_weight` (a decode step is the dearer token on this hardware), divided by the
tenant's weight. The scheduler serves the backlogged tenant with the least counter first. A tenant that
comes back from idle is lifted to the least counter among tenants still being served, so idle time cannot
be banked and spent later as a burst. Only tenants with work in the engine have counters: memory is bounded
by the backlog, and when everyone is idle the slate is clean.

Tenants are opaque keys (the gateway's per-tenant HMAC); the engine never learns who they are.
"""
from __future__ import annotations

from collections import Counter


class FairShare:
    def __init__(self, *, prefill_weight: float = 1.0, decode_weight: float = 2.0) -> None:
        if prefill_weight < 0 or decode_weight < 0 or prefill_weight + decode_weight == 0:
            raise ValueError("prefill_weight and decode_weight must be >= 0, not both 0")
        self.prefill_weight, self.decode_weight = prefill_weight, decode_weight
        self._counter: dict[str | None, float] = {}
        self._live: Counter[str | None] = Counter()  # unfinished sequences per tenant

    def arrive(self, tenant: str | None) -> None:
        """A sequence of `tenant` enters the engine."""
        if not self._live[tenant]:
            others = [self._counter[t] for t, n in self._live.items() if n and t != tenant]
            floor = min(others) if others else 0.0
            self._counter[tenant] = max(self._counter.get(tenant, 0.0), floor)
        self._live[tenant] += 1

    def leave(self, tenant: str | None) -> None:
        """A sequence of `tenant` finished; a tenant with none left is forgotten."""
        self._live[tenant] -= 1
        if self._live[tenant] <= 0:
            del self._live[tenant]
            self._counter.pop(tenant, None)

    def charge(self, tenant: str | None, weight: float, *, prefill_tokens: int, decode_tokens: int) -> None:
        cost = self.prefill_weight * prefill_tokens + self.decode_weight * decode_tokens
        if cost and tenant in self._counter:
            self._counter[tenant] += cost / weight

    def served(self, tenant: str | None) -> float:
        return self._counter.get(tenant, 0.0)

    def __len__(self) -> int:
        return len(self._live)
