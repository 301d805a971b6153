"""The alert events a webhook may subscribe to, and the one shape each is sent in."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BUDGET_CROSSED = "budget.crossed"
CANARY_ROLLED_BACK = "canary.rolled_back"
SLO_ERROR_RATE = "slo.error_rate"
SLO_TTFT_P99 = "slo.ttft_p99"
VERSION_UNHEALTHY = "version.unhealthy"
LEDGER_SPOOLING = "ledger.spooling"
PING = "ping"  # POST /admin/webhooks/{id}/test: sent to that webhook only, whatever it subscribes to

EVENT_TYPES = (BUDGET_CROSSED, CANARY_ROLLED_BACK, SLO_ERROR_RATE, SLO_TTFT_P99, VERSION_UNHEALTHY,
               LEDGER_SPOOLING)
ALL = "*"

BUDGET_THRESHOLDS = (50, 80, 100)  # percent of a tenant's monthly token budget


@dataclass(frozen=True, slots=True)
class AlertEvent:
    type: str
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.type not in EVENT_TYPES and self.type != PING:
            raise ValueError(f"unknown alert event type {self.type!r}")


def subscribes(events: list[str], event_type: str) -> bool:
    """Whether a webhook listening to `events` wants `event_type` (a ping goes only where it is sent)."""
    return event_type != PING and (ALL in events or event_type in events)
