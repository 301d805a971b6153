"""Periodic on a real event loop: ticks on time, again at once when asked, survives a failing tick, wakes from
another thread, and stop() waits for a tick in flight instead of cancelling it."""
import asyncio
import itertools
import logging
import threading

import pytest

from gateway.domain.periodic import Periodic
from gateway.observability.outage import OutageLog


async def _until(predicate, timeout_s=5.0):
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0)  # yield to the loop under test; bounded by the timeout, never a fixed wait


async def test_ticks_at_once_then_every_interval_until_stopped():
    ticks = []

    async def tick():
        ticks.append(asyncio.get_running_loop().time())

    p = Periodic("t", tick, 0.02)
    p.start()
    await _until(lambda: len(ticks) >= 3)
    await p.stop()
    assert not p.running  # its task has ended: no tick can follow
    assert all(b - a >= 0.015 for a, b in itertools.pairwise(ticks))


async def test_wait_first_and_wake():
    ticks = []

    async def tick():
        ticks.append(1)

    p = Periodic("t", tick, 3600.0, wait_first=True)
    p.start()
    await asyncio.sleep(0)
    assert ticks == []
    p.wake()
    await _until(lambda: len(ticks) == 1)
    threading.Thread(target=p.wake).start()  # from a worker thread
    await _until(lambda: len(ticks) == 2)
    await p.stop()


async def test_true_means_again_at_once():
    left = [3]

    async def tick():
        left[0] -= 1
        return left[0] > 0

    p = Periodic("t", tick, 3600.0)
    p.start()
    await _until(lambda: left[0] == 0)
    await p.stop()


async def test_a_failing_tick_is_reported_and_the_loop_goes_on(caplog):
    calls = []

    async def tick():
        calls.append(1)
        if len(calls) <= 2:
            raise RuntimeError("database down")

    outage = OutageLog(logging.getLogger("test.periodic"), "test: ticking")
    p = Periodic("t", tick, 0.01, outage=outage)
    with caplog.at_level(logging.WARNING, logger="test.periodic"):
        p.start()
        await _until(lambda: len(calls) >= 3)
        await p.stop()
    assert outage.failures == 0
    lines = [r.getMessage() for r in caplog.records]
    assert any("is failing (RuntimeError: database down)" in m for m in lines)
    assert any("recovered after 2 failed attempt(s)" in m for m in lines)


async def test_without_an_outage_a_failure_is_logged_with_its_traceback(caplog):
    calls = []

    async def tick():
        calls.append(1)
        raise ValueError("bad row")

    p = Periodic("t", tick, 0.01)
    with caplog.at_level(logging.ERROR, logger="gateway.domain.periodic"):
        p.start()
        await _until(lambda: len(calls) >= 2)
        await p.stop()
    assert caplog.records[0].exc_info[0] is ValueError


async def test_stop_lets_the_tick_in_flight_finish():
    entered, release, finished = asyncio.Event(), asyncio.Event(), []

    async def tick():
        entered.set()
        await release.wait()
        finished.append(1)

    p = Periodic("t", tick, 3600.0)
    p.start()
    await entered.wait()
    stopping = asyncio.create_task(p.stop())
    await asyncio.sleep(0)
    assert not stopping.done()
    release.set()
    await stopping
    assert finished == [1]


async def test_start_twice_is_one_task_and_stop_before_start_is_fine():
    p = Periodic("t", lambda: asyncio.sleep(0), 1.0)
    await p.stop()
    p.start()
    task = p._task
    p.start()
    assert p._task is task
    await p.stop()


def test_a_non_positive_interval_is_refused():
    with pytest.raises(ValueError, match="interval_s"):
        Periodic("t", lambda: asyncio.sleep(0), 0)
