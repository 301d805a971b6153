from __future__ import annotations

import threading

import pytest

from gateway.events import KeyRevoked, LocalEventBus, Resync, RouteChanged

from .conftest import Recorder, wait_until

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_a_single_replica_tells_no_one():
    bus, seen = LocalEventBus(), Recorder()
    await bus.start(seen)
    bus.publish(RouteChanged("chat"))
    await wait_until(lambda: bus.stats.published == 1)
    assert seen.events == []
    await bus.stop()


async def test_peers_in_one_process_deliver_to_each_other_not_to_themselves():
    peers: list[LocalEventBus] = []
    a, b = LocalEventBus(peers), LocalEventBus(peers)
    seen_a, seen_b = Recorder(), Recorder(fail=1)
    await a.start(seen_a)
    await b.start(seen_b)
    thread = threading.Thread(target=a.publish, args=(KeyRevoked("k1"),))  # from a worker thread
    thread.start()
    thread.join()
    await wait_until(lambda: seen_b.resyncs == 1)  # its applier failed: rebuilt instead
    a.publish(RouteChanged("chat"))
    a.publish(Resync())
    await wait_until(lambda: seen_b.events == [RouteChanged("chat")] and seen_b.resyncs == 2)
    assert seen_a.events == []
    await b.stop()
    a.publish(RouteChanged("chat"))  # a stopped peer is no longer told
    await a.stop()
