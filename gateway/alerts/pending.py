"""Events raised while the database may be down (the ledger spooling is one: it happens *because* the database
does not answer), held in memory until the delivery worker can write them to the outbox."""
from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

from gateway.domain.alert_events import AlertEvent

log = logging.getLogger(__name__)


class PendingEvents:
    def __init__(self, max_events: int = 1000) -> None:
        if max_events < 1:
            raise ValueError("max_events must be >= 1")
        self._events: deque[AlertEvent] = deque()
        self._max = max_events
        self._lock = threading.Lock()  # the ledger reports spooling from worker threads too

    def add(self, event: AlertEvent) -> None:
        with self._lock:
            if len(self._events) >= self._max:
                dropped = self._events.popleft()
                log.error("alerts: too many events waiting for the database; dropping the oldest (%s)", dropped.type)
            self._events.append(event)

    def __len__(self) -> int:
        return len(self._events)

    def drain(self, write: Callable[[AlertEvent], object]) -> int:
        """Write events oldest first; the first failure puts that event back and raises. Returns how many went."""
        done = 0
        while True:
            with self._lock:
                if not self._events:
                    return done
                event = self._events.popleft()
            try:
                write(event)
            except BaseException:
                with self._lock:
                    self._events.appendleft(event)
                raise
            done += 1
