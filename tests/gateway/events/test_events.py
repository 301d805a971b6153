from __future__ import annotations

import json

import pytest

from gateway.events import EventBusConfig
from gateway.events.events import (BadEvent, CacheInvalidated, KeyRevoked, Resync, RouteChanged, SessionRevoked,
                                   TenantChanged, decode, encode)


@pytest.mark.parametrize("event", [RouteChanged("chat"), CacheInvalidated("t1"), CacheInvalidated("t1", "e1"),
                                   TenantChanged("t1"), KeyRevoked("k1"), SessionRevoked("s1", 2e9), Resync()])
def test_round_trip(event):
    assert decode(json.loads(encode(event, "replica-a"))) == (event, "replica-a")


@pytest.mark.parametrize("body", [{}, {"origin": "a", "kind": "price_changed", "data": {}},
                                  {"origin": "a", "kind": "key_revoked", "data": {"tenant_id": "t"}},
                                  {"origin": "a", "kind": "key_revoked", "data": None}])
def test_unknown_or_malformed_events_are_refused(body):
    with pytest.raises(BadEvent):
        decode(body)


@pytest.mark.parametrize("field,value", [("prefix", ""), ("tick_s", 0), ("timeout_s", 0.3), ("timeout_s", 0),
                                         ("log_size", 0), ("outbox_size", 0), ("backoff_max_s", 0.01)])
def test_config_is_validated(field, value):
    with pytest.raises(ValueError):
        EventBusConfig(**{field: value})
