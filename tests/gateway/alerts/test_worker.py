"""The delivery worker against a real HTTP receiver: signed, retried with backoff under one event id, given up
after max_attempts, and sent once even with two workers racing for the same rows."""
import asyncio
import json
from datetime import timedelta

import pytest

from gateway.alerts.config import AlertsConfig
from gateway.alerts.outbox import emit
from gateway.alerts.pending import PendingEvents
from gateway.alerts.signing import verify
from gateway.alerts.worker import DeliveryWorker
from gateway.db.types import utcnow
from gateway.domain.alert_events import BUDGET_CROSSED, LEDGER_SPOOLING, AlertEvent
from tests.gateway.alerts.conftest import BOTH
from tests.gateway.alerts.helpers import BOX, SECRET, add_webhook, deliveries
from tests.gateway.alerts.receiver import Receiver

FAST = AlertsConfig(poll_s=0.02, lease_s=5.0, timeout_s=2.0, max_attempts=3, backoff_s=0.05, backoff_max_s=0.2,
                    jitter=0.1, allow_private=True)  # the receiver is on this machine


def fire(database, event: AlertEvent) -> list[str]:
    with database.engine.begin() as conn:
        return emit(conn, event)


async def run_until(worker: DeliveryWorker, done, timeout_s: float = 5.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not done():
            await worker.run_once()
            await asyncio.sleep(0.02)


async def test_a_delivery_is_signed_and_carries_its_event_id(database):
    with Receiver() as rx:
        add_webhook(database, rx.url, [BUDGET_CROSSED])
        (delivery_id,) = fire(database, AlertEvent(BUDGET_CROSSED, {"tenant_id": "t", "threshold": 80}))
        worker = DeliveryWorker(database, FAST, box=BOX)
        await worker.open()
        try:
            await run_until(worker, lambda: len(rx.received) == 1)
        finally:
            await worker.stop()
    (got,) = rx.received
    assert verify(SECRET, got.body, got.headers["x-tollgate-signature"])
    assert got.headers["x-tollgate-event-id"] == delivery_id and got.headers["x-tollgate-event-type"] == BUDGET_CROSSED
    event = json.loads(got.body)
    assert event["id"] == delivery_id and event["type"] == BUDGET_CROSSED and isinstance(event["created"], int)
    assert event["data"] == {"tenant_id": "t", "threshold": 80}
    (row,) = deliveries(database)
    assert (row.status, row.attempts, row.last_status_code, row.next_attempt_at) == ("delivered", 1, 200, None)


async def test_only_subscribers_get_an_event(database):
    with Receiver() as rx:
        add_webhook(database, rx.url, [LEDGER_SPOOLING])
        assert fire(database, AlertEvent(BUDGET_CROSSED, {})) == []
        assert len(fire(database, AlertEvent(LEDGER_SPOOLING, {}))) == 1


@BOTH
async def test_a_500_is_retried_with_backoff_under_the_same_event_id(database):
    with Receiver(statuses=[500, 503]) as rx:
        add_webhook(database, rx.url)
        (delivery_id,) = fire(database, AlertEvent(BUDGET_CROSSED, {"threshold": 50}))
        worker = DeliveryWorker(database, FAST, box=BOX)
        await worker.open()
        try:
            before = utcnow()
            await worker.run_once()
            (row,) = deliveries(database)
            assert (row.status, row.attempts, row.last_status_code) == ("pending", 1, 500)
            # Not due again before the backoff (0.05 s, less 10 % jitter) has passed since the attempt.
            assert row.last_error.startswith("HTTP 500") and row.next_attempt_at >= before + timedelta(seconds=0.045)
            await run_until(worker, lambda: len(rx.received) == 3)
        finally:
            await worker.stop()
    assert [r.answered for r in rx.received] == [500, 503, 200]
    assert {r.headers["x-tollgate-event-id"] for r in rx.received} == {delivery_id}
    assert len({r.body for r in rx.received}) == 1  # the same bytes every time
    (row,) = deliveries(database)
    assert (row.status, row.attempts, row.last_error) == ("delivered", 3, None)


async def test_gives_up_after_max_attempts(database):
    with Receiver(statuses=[500] * 10) as rx:
        add_webhook(database, rx.url)
        fire(database, AlertEvent(BUDGET_CROSSED, {}))
        worker = DeliveryWorker(database, FAST, box=BOX)
        await worker.open()
        try:
            await run_until(worker, lambda: deliveries(database)[0].status == "failed")
            await asyncio.sleep(0.3)
            await worker.run_once()
        finally:
            await worker.stop()
    assert len(rx.received) == FAST.max_attempts
    (row,) = deliveries(database)
    assert (row.status, row.attempts, row.next_attempt_at) == ("failed", 3, None)
    assert row.last_error.startswith("HTTP 500")


async def test_an_unreachable_receiver_is_an_attempt_that_failed(database):
    add_webhook(database, "http://127.0.0.1:9/nothing-listens-here")
    fire(database, AlertEvent(BUDGET_CROSSED, {}))
    worker = DeliveryWorker(database, FAST, box=BOX)
    await worker.open()
    try:
        await worker.run_once()
    finally:
        await worker.stop()
    (row,) = deliveries(database)
    assert row.status == "pending" and row.attempts == 1 and row.last_status_code is None
    assert "Connect" in row.last_error


async def test_a_receiver_too_slow_to_answer_is_a_timed_out_attempt(database):
    with Receiver(delay_s=1.0) as rx:
        add_webhook(database, rx.url)
        fire(database, AlertEvent(BUDGET_CROSSED, {}))
        worker = DeliveryWorker(database, AlertsConfig(poll_s=0.02, lease_s=5.0, timeout_s=0.2, allow_private=True),
                                box=BOX)
        await worker.open()
        try:
            await worker.run_once()
        finally:
            await worker.stop()
    (row,) = deliveries(database)
    assert row.status == "pending" and row.attempts == 1 and row.last_error.startswith("TimeoutError")


@BOTH
async def test_two_workers_racing_deliver_each_event_once(database):
    with Receiver() as rx:
        add_webhook(database, rx.url)
        add_webhook(database, rx.url)
        ids = []
        for i in range(10):
            ids += fire(database, AlertEvent(BUDGET_CROSSED, {"n": i}))
        config = AlertsConfig(poll_s=0.02, lease_s=5.0, timeout_s=2.0, batch=3, allow_private=True)
        a = DeliveryWorker(database, config, box=BOX, owner="a")
        b = DeliveryWorker(database, config, box=BOX, owner="b")
        await a.open()
        await b.open()
        try:
            async with asyncio.timeout(10):
                while any(d.status != "delivered" for d in deliveries(database)):
                    await asyncio.gather(a.run_once(), b.run_once())
        finally:
            await a.stop()
            await b.stop()
    got = [r.headers["x-tollgate-event-id"] for r in rx.received]
    assert sorted(got) == sorted(ids) and len(ids) == 20  # every delivery once, none twice
    assert all(d.attempts == 1 for d in deliveries(database))


async def test_events_held_while_the_database_is_down_are_written_once_it_answers(database, monkeypatch):
    with Receiver() as rx:
        add_webhook(database, rx.url, [LEDGER_SPOOLING])
        pending = PendingEvents()
        worker = DeliveryWorker(database, FAST, box=BOX, pending=pending)
        pending.add(AlertEvent(LEDGER_SPOOLING, {"reason": "OperationalError"}))
        real = worker._write_event
        monkeypatch.setattr(worker, "_write_event", lambda e: (_ for _ in ()).throw(ConnectionError("down")))
        await worker.open()
        try:
            with pytest.raises(ConnectionError):  # the loop logs it and polls again
                await worker.run_once()
            assert len(pending) == 1 and deliveries(database) == []
            monkeypatch.setattr(worker, "_write_event", real)
            await run_until(worker, lambda: len(rx.received) == 1)
        finally:
            await worker.stop()
    assert len(pending) == 0 and rx.events()[0]["type"] == LEDGER_SPOOLING


async def test_a_receiver_on_this_machine_gets_nothing_unless_private_targets_are_allowed(database):
    with Receiver() as rx:
        add_webhook(database, rx.url)  # written straight to the table, as a row from before the check would be
        fire(database, AlertEvent(BUDGET_CROSSED, {}))
        worker = DeliveryWorker(database, AlertsConfig(poll_s=0.02, lease_s=5.0, timeout_s=2.0), box=BOX)
        await worker.open()
        try:
            await worker.run_once()
        finally:
            await worker.stop()
    (row,) = deliveries(database)
    assert rx.received == [] and row.status == "pending" and row.attempts == 1 and row.last_status_code is None
    assert row.last_error == "blocked: webhook URLs may not point at a loopback address: 127.0.0.1"
