"""Which versions can take a request now: Serve's replica counts, corrected for losses Serve
has not noticed yet. Plain data; the caller polls `serve.status()` and passes the clock."""
from __future__ import annotations


class VersionHealth:
    def __init__(self, grace_s: float = 15.0) -> None:
        if grace_s <= 0:
            raise ValueError(f"grace_s must be > 0, got {grace_s}")
        self._grace_s = grace_s
        self._running: dict[str, int] = {}  # RUNNING replicas per version, as last polled
        self._healthy: dict[str, bool] = {}
        # Versions that just lost a replica, until Serve's count drops: (when, running then).
        self._suspect: dict[str, tuple[float, int]] = {}

    def update(self, running: dict[str, int], now: float) -> None:
        """A fresh poll: version -> RUNNING replicas according to Serve."""
        for version, count in running.items():
            self._running[version] = count
            if version in self._suspect:
                since, before = self._suspect[version]
                if count < before or now - since > self._grace_s:
                    del self._suspect[version]  # Serve has seen the loss (or it was transient)
                else:
                    count -= 1  # Serve still counts the lost replica: do not route to it
            self._healthy[version] = count > 0

    def lost(self, version: str, now: float) -> None:
        """A replica of `version` died under a request. Serve's status lags the death by a moment;
        until it catches up, count one replica fewer, so a lone replica's version fails over."""
        running = self._running.get(version, 0)
        self._suspect[version] = (now, running)
        self._healthy[version] = running - 1 > 0

    def healthy(self, version: str) -> bool:
        return self._healthy.get(version, False)

    def snapshot(self) -> dict[str, bool]:
        return dict(self._healthy)
