"""Per-version serving metrics: Prometheus for dashboards, sliding windows for decisions."""
from __future__ import annotations

import threading
from collections.abc import Callable

from prometheus_client import Counter, Histogram

from gateway.routing.window import Outcome, SlidingWindow, WindowStats

# Prometheus collectors are process-wide by design (one /metrics per process).
REQUESTS = Counter("tollgate_version_requests", "Generations per model version and outcome",
                   ["version", "outcome"])
TTFT = Histogram("tollgate_version_ttft_seconds", "Time to first token per model version", ["version"],
                 buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
LATENCY = Histogram("tollgate_version_latency_seconds", "Generation latency per model version", ["version"],
                    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120))
ROLLBACKS = Counter("tollgate_route_auto_rollbacks", "Canaries taken out of rotation automatically",
                    ["alias", "version"])
RULE_DECISIONS = Counter("tollgate_route_rule_decisions", "Admitted requests a routing rule sent to its target",
                         ["alias", "rule"])


class VersionMetrics:
    """Outcomes arrive on the event loop; admin reads may come from worker threads: one lock."""

    def __init__(self, window_s: float, clock: Callable[[], float]) -> None:
        self._window_s = window_s
        self._clock = clock
        self._windows: dict[str, SlidingWindow] = {}
        self._lock = threading.Lock()

    def record(self, version: str, *, ok: bool, ttft_s: float | None, latency_s: float) -> None:
        REQUESTS.labels(version, "ok" if ok else "error").inc()
        if ttft_s is not None:
            TTFT.labels(version).observe(ttft_s)
        LATENCY.labels(version).observe(latency_s)
        with self._lock:
            window = self._windows.setdefault(version, SlidingWindow(self._window_s))
            window.add(Outcome(self._clock(), ok, ttft_s, latency_s))

    def stats(self, version: str) -> WindowStats:
        with self._lock:
            window = self._windows.get(version)
            if window is None:
                return WindowStats(0, 0, None, None, None, None)
            return window.stats(self._clock())

    def reset(self, version: str) -> None:
        """Forget a version's window (after a route change its old outcomes say little)."""
        with self._lock:
            window = self._windows.get(version)
            if window is not None:
                window.clear()
