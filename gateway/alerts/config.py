"""`AlertsConfig`: how the delivery worker polls, leases, sends and retries."""
from __future__ import annotations

from dataclasses import dataclass

from gateway.domain.backoff import Backoff


@dataclass(slots=True)
class AlertsConfig:
    poll_s: float = 1.0  # how often a worker looks for due deliveries
    lease_s: float = 30.0  # a claimed delivery is this worker's until then; another may take it after
    timeout_s: float = 10.0  # one POST, connect to last byte
    max_attempts: int = 8  # then `failed`
    backoff_s: float = 2.0  # first retry after about this; doubles each attempt
    backoff_max_s: float = 3600.0
    jitter: float = 0.2  # each delay is scaled by a random factor in [1 - jitter, 1 + jitter]
    batch: int = 20  # deliveries claimed per poll
    # Receivers on loopback, private, link-local or metadata addresses (gateway.alerts.targets): refused
    # unless on-premises receivers are expected (TOLLGATE_WEBHOOKS_ALLOW_PRIVATE).
    allow_private: bool = False
    # The periodic checks (gateway.alerts.monitor): versions without a healthy replica, and the SLOs over the
    # ledger's last `slo_window_s` (at least `slo_min_requests` rows, or no verdict either way).
    check_s: float = 15.0
    slo_window_s: float = 300.0
    slo_min_requests: int = 20
    retention_s: float = 30 * 86400.0  # delivered and failed deliveries older than this are deleted

    def __post_init__(self) -> None:
        if self.poll_s <= 0 or self.timeout_s <= 0 or self.backoff_s <= 0 or self.backoff_max_s < self.backoff_s:
            raise ValueError("poll_s, timeout_s and backoff_s must be > 0, and backoff_max_s >= backoff_s")
        if self.lease_s <= self.timeout_s + self.poll_s:
            # A lease that could lapse mid-send would let a second worker send the same delivery at once.
            raise ValueError("lease_s must exceed timeout_s + poll_s")
        if self.max_attempts < 1 or self.batch < 1:
            raise ValueError("max_attempts and batch must be >= 1")
        if self.check_s <= 0 or self.slo_window_s <= 0 or self.slo_min_requests < 1 or self.retention_s <= 0:
            raise ValueError("check_s, slo_window_s and retention_s must be > 0, slo_min_requests >= 1")
        if not 0 <= self.jitter < 1:
            raise ValueError("jitter must be in [0, 1)")

    @property
    def backoff(self) -> Backoff:
        """A failed delivery's retry `n` (0-based) waits about backoff_s * 2**n, capped, jittered so a receiver
        that comes back is not hit by every gateway's retries in the same second."""
        return Backoff(self.backoff_s, self.backoff_max_s, (1 - self.jitter, 1 + self.jitter))
