"""Replica events: route changes, cache invalidations, tenant changes, key and console-session revocations made on
one gateway replica reach the others (Redis pub/sub plus a version counter; in process without Redis)."""
from gateway.events.bus import Applier, BusStats, EventBus, EventBusConfig, LocalEventBus
from gateway.events.events import (CacheInvalidated, Event, KeyRevoked, Resync, RouteChanged, SessionRevoked,
                                   TenantChanged, UpstreamChanged)
from gateway.events.redis_bus import RedisEventBus

__all__ = ["Applier", "BusStats", "CacheInvalidated", "Event", "EventBus", "EventBusConfig", "KeyRevoked",
           "LocalEventBus", "RedisEventBus", "Resync", "RouteChanged", "SessionRevoked", "TenantChanged",
           "UpstreamChanged"]
