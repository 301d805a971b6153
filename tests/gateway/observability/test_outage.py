"""A background loop during an outage: one line when it starts failing, one when it recovers (with the count),
nothing per attempt in between; shown on the batch runner whose database store keeps failing."""
from __future__ import annotations

import asyncio
import logging

from gateway.batch.runner import BatchRunner, RunnerConfig
from gateway.observability.outage import OutageLog


def test_one_line_down_one_line_up_with_the_count(caplog):
    log = logging.getLogger("tollgate.test-outage")
    outage = OutageLog(log, "worker: polling")
    with caplog.at_level(logging.INFO, logger="tollgate.test-outage"):
        outage.succeeded()  # nothing to report while all is well
        for _ in range(50):
            outage.failed(ConnectionRefusedError("connection refused\nsecond line"))
        assert outage.failing
        outage.succeeded()
        outage.succeeded()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and not any(r.exc_info for r in caplog.records)
    assert lines[0] == ("worker: polling is failing (ConnectionRefusedError: connection refused); retrying, and "
                        "logging again when it recovers")
    assert lines[1].startswith("worker: polling recovered after 50 failed attempt(s) over ")


class DownStore:
    """A batch store whose database is unreachable until `up` is set."""

    def __init__(self) -> None:
        self.up = False
        self.calls = 0

    async def claim(self, owner, lease_s, limit, skip):
        self.calls += 1
        if not self.up:
            raise ConnectionRefusedError("could not connect to server: Connection refused")
        return []

    async def sweep_files(self, limit):
        return 0


async def test_the_batch_runner_logs_an_outage_twice_not_every_poll(caplog):
    store = DownStore()
    runner = BatchRunner(store, execute=None, config=RunnerConfig(poll_s=0.01, lease_s=1.0, sweep_s=3600))
    with caplog.at_level(logging.INFO, logger="tollgate.batch"):
        await runner.start()
        try:
            async with asyncio.timeout(5):
                while store.calls < 20:
                    await asyncio.sleep(0.01)
                store.up = True
                while runner._claiming.failing:
                    await asyncio.sleep(0.01)
        finally:
            await runner.stop()
    lines = [r.getMessage() for r in caplog.records if r.name == "tollgate.batch"]
    assert len(lines) == 2, lines
    assert "claiming batches is failing (ConnectionRefusedError" in lines[0]
    assert "claiming batches recovered after" in lines[1]
    assert not any(r.exc_info for r in caplog.records if r.levelno >= logging.INFO)
