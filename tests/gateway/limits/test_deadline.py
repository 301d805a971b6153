"""Deadlines that blame the server only for its own delays: a silent server costs the timeout while
the loop keeps time; a loop that is itself running late extends it (up to the hard cap); and the
caller is let go on time even if the awaited code will not be cancelled."""
from __future__ import annotations

import asyncio
import time

import pytest

from gateway.limits.storage.deadline import LoopWatch, within

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the watch's loop is the tests' loop
TIMEOUT_S = 0.2


@pytest.fixture
async def watch():
    w = LoopWatch(period_s=0.01, window_s=1.0)
    w.start()
    yield w
    w.stop()


async def silent() -> None:
    await asyncio.Event().wait()


async def test_an_answer_in_time_is_returned(watch):
    async def answer():
        await asyncio.sleep(0.01)
        return 42
    assert await within(answer(), TIMEOUT_S, 1.0, watch) == 42


async def test_errors_pass_through(watch):
    async def fail():
        raise ConnectionError("refused")
    with pytest.raises(ConnectionError):
        await within(fail(), TIMEOUT_S, 1.0, watch)


async def test_a_silent_server_costs_the_timeout(watch):
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await within(silent(), TIMEOUT_S, 1.0, watch)
    assert TIMEOUT_S <= time.monotonic() - started < TIMEOUT_S + 0.08


async def test_a_late_loop_extends_the_deadline_up_to_the_cap(watch):
    loop = asyncio.get_running_loop()
    stalls = []

    def stall() -> None:  # the loop busy with other work: 40 ms blocks, again and again
        time.sleep(0.04)
        stalls.append(loop.call_later(0.005, stall))

    stalls.append(loop.call_soon(stall))
    try:
        async def slow_but_answers():
            await asyncio.sleep(0.3)
            return "late"
        assert await within(slow_but_answers(), TIMEOUT_S, 1.0, watch) == "late"
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await within(silent(), TIMEOUT_S, 0.5, watch)
        assert 0.5 <= time.monotonic() - started < 0.7
    finally:
        stalls[-1].cancel()


async def test_a_stall_at_the_start_does_not_excuse_a_silent_server(watch):
    async def stalled_then_silent():
        time.sleep(0.15)  # noqa: ASYNC251 (blocks the loop once, on purpose), then waits forever
        await asyncio.Event().wait()
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await within(stalled_then_silent(), TIMEOUT_S, 2.0, watch)
    assert time.monotonic() - started < 0.15 + TIMEOUT_S + 0.15


async def test_the_caller_is_let_go_even_if_the_call_ignores_cancellation(watch):
    finished = asyncio.Event()

    async def stubborn():
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0.3)  # unwinding slowly, as a client library may
            finished.set()
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await within(stubborn(), TIMEOUT_S, 1.0, watch)
    assert time.monotonic() - started < TIMEOUT_S + 0.08
    await asyncio.wait_for(finished.wait(), 1.0)  # it did unwind, on its own


async def test_an_unstarted_watch_reads_on_time():
    w = LoopWatch()
    assert w.late_share(0.0) == 0.0  # not started


@pytest.mark.parametrize("period_s, window_s", [(0.0, 1.0), (0.5, 0.1)])
async def test_loop_watch_is_validated(period_s, window_s):
    with pytest.raises(ValueError):
        LoopWatch(period_s=period_s, window_s=window_s)
