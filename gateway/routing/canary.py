"""Automatic rollback: a canary that does worse than its stable version leaves rotation.

`judge` is the pure rule; `CanaryMonitor` applies it to the live routes and windows."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gateway.routing.route import Route
from gateway.routing.window import WindowStats


@dataclass(slots=True)
class RollbackPolicy:
    enabled: bool = True
    window_s: float = 60.0  # outcomes older than this are forgotten
    min_samples: int = 20  # canary outcomes needed in the window before judging
    error_rate_margin: float = 0.05  # canary error rate may exceed stable's by this much (absolute)
    ttft_p99_margin: float = 0.5  # canary p99 TTFT may exceed stable's by this fraction
    min_stable_samples: int = 5  # stable outcomes needed to compare TTFT

    def __post_init__(self) -> None:
        if self.window_s <= 0:
            raise ValueError(f"window_s must be > 0, got {self.window_s}")
        if self.min_samples < 1:
            raise ValueError(f"min_samples must be >= 1, got {self.min_samples}")
        if not 0 <= self.error_rate_margin <= 1:
            raise ValueError(f"error_rate_margin must be in [0, 1], got {self.error_rate_margin}")
        if self.ttft_p99_margin < 0:
            raise ValueError(f"ttft_p99_margin must be >= 0, got {self.ttft_p99_margin}")
        if self.min_stable_samples < 1:
            raise ValueError(f"min_stable_samples must be >= 1, got {self.min_stable_samples}")


def judge(canary: WindowStats, stable: WindowStats, policy: RollbackPolicy) -> str | None:
    """Why the canary should be rolled back, or None to keep it.

    Error rates compare even when the stable version saw no traffic (its rate is then 0):
    a canary failing on its own is reason enough. TTFT needs samples on both sides."""
    if canary.requests < policy.min_samples:
        return None
    if canary.error_rate > stable.error_rate + policy.error_rate_margin:
        return (f"error rate {canary.error_rate:.1%} over {canary.requests} requests exceeds "
                f"stable's {stable.error_rate:.1%} by more than {policy.error_rate_margin:.1%}")
    if (canary.ttft_p99_s is not None and stable.ttft_p99_s is not None
            and stable.requests >= policy.min_stable_samples
            and canary.ttft_p99_s > stable.ttft_p99_s * (1 + policy.ttft_p99_margin)):
        return (f"p99 TTFT {canary.ttft_p99_s * 1000:.0f} ms exceeds stable's "
                f"{stable.ttft_p99_s * 1000:.0f} ms by more than {policy.ttft_p99_margin:.0%}")
    return None


@dataclass(frozen=True, slots=True)
class RollbackVerdict:
    alias: str
    version: str
    reason: str


class CanaryMonitor:
    def __init__(self, policy: RollbackPolicy) -> None:
        self.policy = policy

    def verdicts(self, version: str, routes: Mapping[str, Route], stats) -> list[RollbackVerdict]:
        """Every alias where `version` is a live canary that should leave rotation.
        `stats(version) -> WindowStats` reads the current window."""
        if not self.policy.enabled:
            return []
        out = []
        for route in routes.values():
            if version not in route.canaries:
                continue
            reason = judge(stats(version), stats(route.stable), self.policy)
            if reason is not None:
                out.append(RollbackVerdict(route.alias, version, reason))
        return out
