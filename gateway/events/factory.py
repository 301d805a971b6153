"""Build the gateway's event bus from Settings: Redis when REDIS_URL is set, else in process."""
from __future__ import annotations

from gateway.events.bus import EventBus, EventBusConfig, LocalEventBus
from gateway.events.redis_bus import RedisEventBus
from gateway.settings import Settings


def build_event_bus(settings: Settings) -> EventBus:
    if not settings.redis_url:
        return LocalEventBus()  # one replica: nobody else to tell
    config = EventBusConfig(prefix=settings.events_prefix, tick_s=settings.events_tick_s,
                            timeout_s=settings.events_redis_timeout_s)
    return RedisEventBus(settings.redis_url, config)
