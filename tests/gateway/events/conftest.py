from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from gateway.events import EventBusConfig, RedisEventBus

REDIS_PORT = 6379


class Recorder:
    """An Applier that remembers what it was asked to do, and when."""

    def __init__(self, *, fail: int = 0) -> None:
        self.events: list = []
        self.times: list[float] = []
        self.resyncs = 0
        self._fail = fail  # raise on this many applies first

    async def apply(self, event) -> None:
        if self._fail:
            self._fail -= 1
            raise RuntimeError("applier failed (test)")
        self.events.append(event)
        self.times.append(time.monotonic())

    async def resync(self) -> None:
        self.resyncs += 1


async def wait_until(predicate, timeout_s: float = 2.0) -> float:
    """Seconds until `predicate()` held; AssertionError after `timeout_s`."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"not within {timeout_s} s")
        await asyncio.sleep(0.005)
    return time.monotonic() - started


@pytest.fixture
def prefix() -> str:
    """Keys and channel of this test alone (channels are shared by every database of a server)."""
    return f"tg-test-events:{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def make_bus(prefix):
    """Start a RedisEventBus with a Recorder; every bus is stopped at the end."""
    started: list[RedisEventBus] = []

    async def make(url: str = f"redis://127.0.0.1:{REDIS_PORT}/0", recorder: Recorder | None = None,
                   **config) -> tuple[RedisEventBus, Recorder]:
        recorder = recorder or Recorder()
        bus = RedisEventBus(url, EventBusConfig(prefix=config.pop("prefix", prefix), **config))
        await bus.start(recorder)
        started.append(bus)
        if bus.connected:  # every bus resyncs on first connecting (test_first_connection_resyncs)
            await wait_until(lambda: recorder.resyncs == 1)
            recorder.resyncs = 0
        return bus, recorder

    yield make
    for bus in started:
        await bus.stop(flush_s=0.2)
