"""Two RedisEventBus instances on one real Redis: delivery within a second, catch-up through the
version counter and the log when pub/sub lost a message, and a Redis outage survived."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

from gateway.events import CacheInvalidated, EventBusConfig, KeyRevoked, RedisEventBus, RouteChanged, TenantChanged
from tests.faults.servers import ThrowawayRedis

from .conftest import REDIS_PORT, Recorder, wait_until
from .proxy import TcpProxy

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.redis]

EVENTS = [RouteChanged("chat"), CacheInvalidated("t1"), CacheInvalidated("t1", "e1"), TenantChanged("t2"),
          KeyRevoked("k3")]


async def test_first_connection_resyncs(prefix):
    """A replica's routes were read when it was built, maybe minutes before the bus started (a
    model loading): whatever changed meanwhile is caught by one resync on first connecting."""
    bus, seen = RedisEventBus(f"redis://127.0.0.1:{REDIS_PORT}/0", EventBusConfig(prefix=prefix)), Recorder()
    await bus.start(seen)
    try:
        assert bus.connected and seen.resyncs == 1 and bus.stats.resyncs == 1
    finally:
        await bus.stop()


async def test_every_kind_reaches_the_other_replica_within_a_second(make_bus):
    a, seen_by_a = await make_bus()
    b, seen_by_b = await make_bus()
    sent = time.monotonic()
    for event in EVENTS:
        a.publish(event)
    await wait_until(lambda: len(seen_by_b.events) == len(EVENTS), timeout_s=1.0)
    assert seen_by_b.events == EVENTS
    assert max(seen_by_b.times) - sent < 1.0
    await asyncio.sleep(0.1)
    assert seen_by_a.events == []  # the publisher applied its own change already
    assert b.stats.delivered == len(EVENTS) and seen_by_b.resyncs == 0 and a.stats.published == len(EVENTS)


async def test_both_directions_and_from_worker_threads(make_bus):
    a, seen_by_a = await make_bus()
    b, seen_by_b = await make_bus()
    # Sync admin routes run in the threadpool: publish must be safe there, and must not block.
    threads = [threading.Thread(target=a.publish, args=(KeyRevoked(f"k{i}"),)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    b.publish(RouteChanged("chat"))
    await wait_until(lambda: len(seen_by_b.events) == 20 and seen_by_a.events == [RouteChanged("chat")])
    assert sorted(e.key_id for e in seen_by_b.events) == sorted(f"k{i}" for i in range(20))


async def test_missed_messages_are_replayed_from_the_log_after_a_reconnect(make_bus):
    proxy = await TcpProxy(REDIS_PORT).start()
    a, _ = await make_bus()
    b, seen_by_b = await make_bus(f"redis://127.0.0.1:{proxy.port}/0")
    assert b.connected
    await proxy.cut()  # b is cut off; a is not
    await wait_until(lambda: not b.connected)
    for event in EVENTS[:3]:
        a.publish(event)
    await wait_until(lambda: a.stats.published == 3)
    await asyncio.sleep(0.3)
    assert seen_by_b.events == []
    restored = time.monotonic()
    await proxy.restore()
    await wait_until(lambda: len(seen_by_b.events) == 3, timeout_s=2.0)
    assert seen_by_b.events == EVENTS[:3]  # in order, none lost
    assert b.stats.replayed == 3 and seen_by_b.resyncs == 0 and b.stats.reconnects >= 1
    assert time.monotonic() - restored < 2.0
    await proxy.cut()


async def test_a_message_pubsub_never_delivered_is_caught_up_at_the_next_tick(make_bus, prefix):
    a, _ = await make_bus()
    b, seen_by_b = await make_bus()
    a._channel = f"{prefix}:nobody-listens"  # numbered and logged, but the PUBLISH reaches no one
    a.publish(TenantChanged("t1"))
    await wait_until(lambda: seen_by_b.events == [TenantChanged("t1")], timeout_s=1.0)
    assert b.stats.replayed == 1 and b.stats.delivered == 0


async def test_a_gap_the_log_no_longer_holds_resyncs(make_bus):
    proxy = await TcpProxy(REDIS_PORT).start()
    a, _ = await make_bus(log_size=2)
    _b, seen_by_b = await make_bus(f"redis://127.0.0.1:{proxy.port}/0", log_size=2)
    await proxy.cut()
    for event in EVENTS:
        a.publish(event)
    await wait_until(lambda: a.stats.published == len(EVENTS))
    await proxy.restore()
    await wait_until(lambda: seen_by_b.resyncs == 1, timeout_s=2.0)
    assert seen_by_b.events == []  # rebuilt from the database instead
    a.publish(KeyRevoked("k9"))  # and back to plain delivery
    await wait_until(lambda: seen_by_b.events == [KeyRevoked("k9")], timeout_s=1.0)
    await proxy.cut()


async def test_a_failing_applier_is_followed_by_a_resync(make_bus):
    a, _ = await make_bus()
    _b, seen_by_b = await make_bus(recorder=Recorder(fail=1))
    a.publish(RouteChanged("chat"))
    await wait_until(lambda: seen_by_b.resyncs == 1, timeout_s=1.5)
    a.publish(RouteChanged("chat"))
    await wait_until(lambda: seen_by_b.events == [RouteChanged("chat")], timeout_s=1.0)


async def test_redis_down_then_back(make_bus, prefix):
    with ThrowawayRedis() as redis:
        a, _ = await make_bus(redis.url)
        b, seen_by_b = await make_bus(redis.url)
        a.publish(RouteChanged("warm-up"))
        await wait_until(lambda: seen_by_b.events == [RouteChanged("warm-up")])

        redis.stop()
        await wait_until(lambda: not a.connected and not b.connected)
        started = time.monotonic()
        a.publish(KeyRevoked("k1"))  # an admin request during the outage: returns at once
        assert time.monotonic() - started < 0.01
        await asyncio.sleep(1.0)  # a few reconnection attempts, backing off

        redis.start()  # empty: the counter, the epoch and the log are gone
        back = time.monotonic()
        await wait_until(lambda: a.connected and b.connected, timeout_s=3.0)
        # b learns of the outage's change: as the event itself, or by resyncing (a new epoch).
        await wait_until(lambda: KeyRevoked("k1") in seen_by_b.events or seen_by_b.resyncs >= 1, timeout_s=3.0)
        await wait_until(lambda: a.stats.published == 2, timeout_s=3.0)  # the outbox reached Redis
        assert time.monotonic() - back < 3.0
        a.publish(TenantChanged("t1"))
        await wait_until(lambda: TenantChanged("t1") in seen_by_b.events, timeout_s=1.0)


async def test_a_hung_redis_blocks_neither_publishers_nor_the_event_loop(make_bus):
    with ThrowawayRedis() as redis:
        a, _ = await make_bus(redis.url)
        b, seen_by_b = await make_bus(redis.url)
        redis.pause()  # connections stay open; nothing answers
        try:
            lag = 0.0
            for i in range(40):  # 2 s of a hung Redis
                before = time.monotonic()
                a.publish(KeyRevoked(f"k{i}"))
                await asyncio.sleep(0.05)
                lag = max(lag, time.monotonic() - before - 0.05)
            assert lag < 0.1
            assert not b.connected
        finally:
            redis.resume()
        await wait_until(lambda: a.stats.published >= 40 or seen_by_b.resyncs >= 1, timeout_s=5.0)
        await wait_until(lambda: len(seen_by_b.events) == 40 or seen_by_b.resyncs >= 1, timeout_s=3.0)
        stopping = time.monotonic()
        redis.pause()
        try:
            await a.stop(flush_s=0.2)  # bounded even against a hung server
            await b.stop(flush_s=0.2)
            assert time.monotonic() - stopping < 2.0
        finally:
            redis.resume()


async def test_an_overflowing_outbox_collapses_into_one_resync(make_bus):
    with ThrowawayRedis() as redis:
        a, _ = await make_bus(redis.url, outbox_size=5)
        _b, seen_by_b = await make_bus(redis.url)
        redis.stop()
        await wait_until(lambda: not a.connected)
        for i in range(12):
            a.publish(KeyRevoked(f"k{i}"))
        redis.start()
        await wait_until(lambda: seen_by_b.resyncs >= 1, timeout_s=4.0)
        await wait_until(lambda: not a._outbox, timeout_s=2.0)
