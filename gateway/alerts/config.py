"""`AlertsConfig`: how the delivery worker polls, leases, sends and retries."""
from __future__ import annotations

from typing import Annotated

from pydantic import Field

from gateway.domain.backoff import Backoff
from gateway.domain.validation import Count, Seconds, config


@config(slots=True)
class AlertsConfig:
    poll_s: Seconds = 1.0  # how often a worker looks for due deliveries
    lease_s: Seconds = 30.0  # a claimed delivery is this worker's until then; another may take it after
    timeout_s: Seconds = 10.0  # one POST, connect to last byte
    max_attempts: Count = 8  # then `failed`
    backoff_s: Seconds = 2.0  # first retry after about this; doubles each attempt
    backoff_max_s: Seconds = 3600.0
    jitter: Annotated[float, Field(ge=0, lt=1)] = 0.2  # delays scaled by a random factor in [1 - jitter, 1 + jitter]
    batch: Count = 20  # deliveries claimed per poll
    # Receivers on loopback, private, link-local or metadata addresses (gateway.alerts.targets): refused
    # unless on-premises receivers are expected (TOLLGATE_WEBHOOKS_ALLOW_PRIVATE).
    allow_private: bool = False
    # The periodic checks (gateway.alerts.monitor): versions without a healthy replica, and the SLOs over the
    # ledger's last `slo_window_s` (at least `slo_min_requests` rows, or no verdict either way).
    check_s: Seconds = 15.0
    slo_window_s: Seconds = 300.0
    slo_min_requests: Count = 20
    retention_s: Seconds = 30 * 86400.0  # delivered and failed deliveries older than this are deleted

    def __post_init__(self) -> None:
        if self.backoff_max_s < self.backoff_s:
            raise ValueError("backoff_max_s must be >= backoff_s")
        if self.lease_s <= self.timeout_s + self.poll_s:
            # A lease that could lapse mid-send would let a second worker send the same delivery at once.
            raise ValueError("lease_s must exceed timeout_s + poll_s")

    @property
    def backoff(self) -> Backoff:
        """A failed delivery's retry `n` (0-based) waits about backoff_s * 2**n, capped, jittered so a receiver
        that comes back is not hit by every gateway's retries in the same second."""
        return Backoff(self.backoff_s, self.backoff_max_s, (1 - self.jitter, 1 + self.jitter))
