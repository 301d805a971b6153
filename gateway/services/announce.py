"""An admin change, told to the other gateway replicas (gateway.events)."""
from __future__ import annotations

from gateway.events.events import Event
from gateway.services import Services


def announce(services: Services, event: Event) -> None:
    """Publish after the change is committed and applied here; never fails the request. A services
    container without a bus (a test app holding only what its routes read) tells no one."""
    bus = getattr(services, "events", None)
    if bus is not None:
        bus.publish(event)
