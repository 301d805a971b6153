"""Console sessions signed out, by session id, each kept until it would have expired anyway. One per process,
filled by this replica's sign-outs and, through the event bus, every other replica's."""
from __future__ import annotations

import time


class SessionRevocations:
    def __init__(self) -> None:
        self._until: dict[str, float] = {}

    def revoke(self, sid: str, until: float) -> None:
        now = time.time()
        self._until = {s: t for s, t in self._until.items() if t > now}
        if until > now:
            self._until[sid] = until

    def revoked(self, sid: str) -> bool:
        return sid in self._until
