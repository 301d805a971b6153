"""The runner over a real database (SQLite and PostgreSQL) with a fake endpoint: every line exactly once
through a crash and a take-over, two runners never sharing a batch, pauses, cancel and expiry."""
from __future__ import annotations

import asyncio
import json
from collections import Counter
from datetime import timedelta

import pytest

from gateway.batch.ids import line_request_id, new_batch_id, new_file_id
from gateway.batch.output import LineResult
from gateway.batch.runner import BatchRunner, Paused, RunnerConfig
from gateway.batch.store import BatchStore
from gateway.crud import batch_files, batches
from gateway.crud.keys import create_key
from gateway.crud.tenants import create_tenant
from gateway.db.models.batch import Batch
from gateway.db.types import utcnow
from gateway.domain import batch_state as state

EP = "/v1/chat/completions"
QUICK = dict(poll_s=0.02, lease_s=1.0, stop_timeout_s=5.0)


class FakeEndpoint:
    """Answers each line with its body's "n"; `gate` (when set) holds lines until opened; `pause_first`
    refuses each line's first try with Paused."""

    def __init__(self, *, delay_s: float = 0.0, pause_first: bool = False) -> None:
        self.calls: Counter[str] = Counter()
        self.delay_s, self.pause_first = delay_s, pause_first
        self.keys: set[str] = set()

    async def __call__(self, key_id: str, endpoint: str, body: dict, request_id: str) -> LineResult:
        self.keys.add(key_id)
        self.calls[request_id] += 1
        if self.pause_first and self.calls[request_id] == 1:
            raise Paused(0.05, "rate limited")
        await asyncio.sleep(self.delay_s)
        if body.get("fail"):
            return LineResult(400, {"error": {"message": "no", "type": "invalid_request_error", "param": None,
                                              "code": None}})
        return LineResult(200, {"n": body["n"]})


def make_batch(database, n: int, *, expires_in_s: float = 3600, fail: set[int] = frozenset()) -> tuple[str, str]:
    """(batch id, key id) of a validating batch of `n` lines."""
    lines = [{"custom_id": f"c{i}", "method": "POST", "url": EP,
              "body": {"model": "m", "n": i, **({"fail": True} if i in fail else {})}} for i in range(n)]
    with database.session() as s:
        tenant = create_tenant(s, name=f"t-{new_file_id()}")
        key, _ = create_key(s, tenant_id=tenant.id)
        f = batch_files.create_file(s, tenant_id=tenant.id, file_id=new_file_id(), filename="in.jsonl",
                                    purpose="batch", content=b"".join(json.dumps(x).encode() + b"\n" for x in lines))
        now = utcnow()
        b = batches.create_batch(s, batch=Batch(
            id=new_batch_id(), tenant_id=tenant.id, key_id=key.id, endpoint=EP, input_file_id=f.id,
            completion_window="24h", status=state.VALIDATING, total=0, completed=0, failed=0, created_at=now,
            expires_at=now + timedelta(seconds=expires_in_s)))
        return b.id, key.id


def get(database, batch_id: str) -> Batch:
    with database.session() as s:
        return s.get(Batch, batch_id)


def output(database, file_id: str | None) -> list[dict]:
    if file_id is None:
        return []
    with database.session() as s:
        row = s.get(batch_files.BatchFile, file_id)
        return [json.loads(x) for x in bytes(row.content).splitlines()]


async def until(predicate, timeout_s: float = 20.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not await asyncio.to_thread(predicate):
            await asyncio.sleep(0.02)


def runner(database, endpoint, **config) -> BatchRunner:
    return BatchRunner(BatchStore(database), endpoint, RunnerConfig(**{**QUICK, **config}))


async def test_a_batch_runs_each_line_once_as_its_key(database):
    batch_id, key_id = make_batch(database, 12, fail={3})
    endpoint = FakeEndpoint()
    r = runner(database, endpoint, concurrency=3)
    await r.start()
    await until(lambda: get(database, batch_id).status == state.COMPLETED)
    await r.stop()
    b = get(database, batch_id)
    assert (b.total, b.completed, b.failed) == (12, 11, 1) and b.lease_owner is None
    assert endpoint.keys == {key_id} and set(endpoint.calls.values()) == {1}
    assert set(endpoint.calls) == {line_request_id(batch_id, i) for i in range(12)}
    out = output(database, b.output_file_id)
    assert [o["custom_id"] for o in out] == [f"c{i}" for i in range(12) if i != 3]
    assert [o["response"]["body"]["n"] for o in out] == [i for i in range(12) if i != 3]
    assert [o["custom_id"] for o in output(database, b.error_file_id)] == ["c3"]


async def test_a_crashed_runner_is_taken_over_without_running_a_line_twice(database, monkeypatch):
    batch_id, _ = make_batch(database, 30)
    endpoint = FakeEndpoint(delay_s=0.01)
    first = runner(database, endpoint, concurrency=2)
    # A crash: nothing handed back, the lease left to lapse, the lines in flight never recorded.
    monkeypatch.setattr(first.store, "release", _no_release)
    await first.start()
    await until(lambda: get(database, batch_id).completed >= 8)
    ticking = first._ticks._task  # killed, not stopped: no clean stop hands anything back
    ticking.cancel()
    for task in list(first._tasks.values()):
        task.cancel()
    await asyncio.gather(ticking, *first._tasks.values(), return_exceptions=True)
    recorded_before = get(database, batch_id).completed
    assert get(database, batch_id).lease_owner == first.owner and recorded_before < 30
    second = runner(database, endpoint, concurrency=4)
    await second.start()
    await until(lambda: get(database, batch_id).status == state.COMPLETED)
    await second.stop()
    b = get(database, batch_id)
    assert (b.completed, b.failed) == (30, 0)
    out = output(database, b.output_file_id)
    assert sorted(o["custom_id"] for o in out) == sorted(f"c{i}" for i in range(30))
    # Only the lines cut off in flight by the crash ran twice (at most the first runner's concurrency).
    assert sum(1 for c in endpoint.calls.values() if c > 1) <= 2


async def _no_release(batch_id, owner):
    return None


async def test_a_graceful_stop_hands_the_batch_back_and_a_new_runner_resumes_it(database):
    batch_id, _ = make_batch(database, 20)
    endpoint = FakeEndpoint(delay_s=0.01)
    first = runner(database, endpoint, concurrency=2)
    await first.start()
    await until(lambda: get(database, batch_id).completed >= 5)
    await first.stop()
    b = get(database, batch_id)
    assert b.status == state.IN_PROGRESS and b.lease_owner is None and b.completed < 20
    second = runner(database, endpoint)
    await second.start()
    await until(lambda: get(database, batch_id).status == state.COMPLETED)
    await second.stop()
    assert set(endpoint.calls.values()) == {1} and len(endpoint.calls) == 20


async def test_two_runners_never_run_the_same_batch(database):
    ids = [make_batch(database, 8)[0] for _ in range(4)]
    endpoint = FakeEndpoint(delay_s=0.005)
    a, b = runner(database, endpoint, concurrency=2), runner(database, endpoint, concurrency=2)
    await a.start()
    await b.start()
    await until(lambda: all(get(database, i).status == state.COMPLETED for i in ids))
    await a.stop()
    await b.stop()
    assert len(endpoint.calls) == 32 and set(endpoint.calls.values()) == {1}


async def test_a_refused_line_pauses_the_batch_and_is_tried_again(database):
    batch_id, _ = make_batch(database, 5)
    endpoint = FakeEndpoint(pause_first=True)
    r = runner(database, endpoint, concurrency=2)
    await r.start()
    await until(lambda: get(database, batch_id).status == state.COMPLETED)
    await r.stop()
    b = get(database, batch_id)
    assert (b.completed, b.failed) == (5, 0) and set(endpoint.calls.values()) == {2}


class FailingEndpoint(FakeEndpoint):
    """Line 1 always times out in the engine."""

    async def __call__(self, key_id, endpoint, body, request_id):
        if body["n"] == 1:
            self.calls[request_id] += 1
            raise Paused(0.01, "timeout", fallback=LineResult(504, {"error": {"code": "timeout"}}))
        return await super().__call__(key_id, endpoint, body, request_id)


async def test_a_line_that_keeps_failing_in_the_engine_gets_its_error_after_max_attempts(database):
    batch_id, _ = make_batch(database, 3)
    endpoint = FailingEndpoint()
    r = runner(database, endpoint, max_attempts=3)
    await r.start()
    await until(lambda: get(database, batch_id).status == state.COMPLETED)
    await r.stop()
    b = get(database, batch_id)
    assert (b.completed, b.failed) == (2, 1) and endpoint.calls[line_request_id(batch_id, 1)] == 3
    (err,) = output(database, b.error_file_id)
    assert err["custom_id"] == "c1" and err["response"]["status_code"] == 504


async def test_cancel_stops_new_lines_and_keeps_what_is_done(database):
    batch_id, _ = make_batch(database, 200)
    r = runner(database, FakeEndpoint(delay_s=0.01), concurrency=2)
    await r.start()
    await until(lambda: get(database, batch_id).completed >= 4)
    with database.session() as s:
        tenant_id = get(database, batch_id).tenant_id
        assert batches.request_cancel(s, tenant_id=tenant_id, batch_id=batch_id, now=utcnow()).status == "cancelling"
    await until(lambda: get(database, batch_id).status == state.CANCELLED)
    await r.stop()
    b = get(database, batch_id)
    assert b.cancelling_at is not None and b.cancelled_at is not None and 4 <= b.completed < 200
    assert len(output(database, b.output_file_id)) == b.completed and b.error_file_id is None


async def test_lines_left_when_the_window_runs_out_are_batch_expired(database):
    batch_id, _ = make_batch(database, 100, expires_in_s=0.6)
    r = runner(database, FakeEndpoint(delay_s=0.02), concurrency=1)
    await r.start()
    await until(lambda: get(database, batch_id).status == state.EXPIRED)
    await r.stop()
    b = get(database, batch_id)
    done, errors = output(database, b.output_file_id), output(database, b.error_file_id)
    assert len(done) + len(errors) == 100 and len(errors) == b.failed > 0 and b.completed == len(done)
    assert {e["error"]["code"] for e in errors} == {"batch_expired"} and all(e["response"] is None for e in errors)


async def test_a_batch_past_its_window_before_it_started_expires(database):
    batch_id, _ = make_batch(database, 3, expires_in_s=-1)
    r = runner(database, FakeEndpoint())
    await r.start()
    await until(lambda: get(database, batch_id).status == state.EXPIRED)
    await r.stop()
    assert get(database, batch_id).output_file_id is None


def test_config_is_checked():
    with pytest.raises(ValueError):
        RunnerConfig(concurrency=0)
    with pytest.raises(ValueError):
        RunnerConfig(poll_s=1.0, lease_s=1.5)
