"""Webhook secrets at rest: stored sealed, opened only to sign; plaintext rows from before 0017 signed as they are
and sealed (once, by whichever replica gets there first); a secret this gateway cannot open fails its delivery
with a classified error and one log line, never a signature under the wrong secret nor the secret in the log."""
import asyncio
import logging

from sqlalchemy import select

from gateway.alerts import Alerts
from gateway.alerts.outbox import emit
from gateway.alerts.sealing import seal_stored
from gateway.alerts.signing import verify
from gateway.alerts.worker import DeliveryWorker
from gateway.db.models.webhook import Webhook
from gateway.domain.alert_events import BUDGET_CROSSED, AlertEvent
from gateway.security.secret_box import SecretBox
from tests.gateway.alerts.conftest import BOTH
from tests.gateway.alerts.helpers import BOX, SECRET, add_webhook, deliveries
from tests.gateway.alerts.receiver import Receiver
from tests.gateway.alerts.test_worker import FAST, run_until


def fire(database) -> str:
    with database.engine.begin() as conn:
        (delivery_id,) = emit(conn, AlertEvent(BUDGET_CROSSED, {"threshold": 80}))
    return delivery_id


def stored(database, webhook_id: str) -> tuple[str, bool, str]:
    with database.engine.connect() as conn:
        return tuple(conn.execute(select(Webhook.secret, Webhook.secret_sealed, Webhook.secret_hint)
                                  .where(Webhook.id == webhook_id)).one())


def add_plaintext_webhook(database, url: str, secret: str = SECRET) -> str:
    """A row as a gateway before 0017 wrote it: the secret as given."""
    with database.engine.begin() as conn:
        conn.execute(Webhook.__table__.insert(), {"id": "wh_legacy", "url": url, "events": ["*"], "secret": secret,
                                                  "secret_sealed": False, "secret_hint": "…" + secret[-4:],
                                                  "thresholds": {}})
    return "wh_legacy"


async def deliver_all(database, worker: DeliveryWorker, rx: Receiver, n: int) -> None:
    await worker.open()
    try:
        await run_until(worker, lambda: len(rx.received) == n)
    finally:
        await worker.stop()


def test_a_new_webhook_is_stored_sealed_with_its_hint(database):
    webhook_id = add_webhook(database, "https://hooks.example.com/x")
    secret, sealed, hint = stored(database, webhook_id)
    assert sealed and SECRET not in secret and BOX.open(secret) == SECRET and hint == "…" + SECRET[-4:]


async def test_a_sealed_secret_signs_its_deliveries(database):
    with Receiver() as rx:
        add_webhook(database, rx.url)
        fire(database)
        await deliver_all(database, DeliveryWorker(database, FAST, box=BOX), rx, 1)
    (got,) = rx.received
    assert verify(SECRET, got.body, got.headers["x-tollgate-signature"])


@BOTH
async def test_a_plaintext_row_signs_and_is_sealed_by_the_worker_that_meets_it(database):
    with Receiver() as rx:
        webhook_id = add_plaintext_webhook(database, rx.url)
        fire(database)
        await deliver_all(database, DeliveryWorker(database, FAST, box=BOX), rx, 1)
    (got,) = rx.received
    assert verify(SECRET, got.body, got.headers["x-tollgate-signature"])
    secret, sealed, _ = stored(database, webhook_id)
    assert sealed and BOX.open(secret) == SECRET


@BOTH
async def test_start_up_sealing_is_once_and_safe_on_many_replicas(database):
    webhook_id = add_plaintext_webhook(database, "https://hooks.example.com/x")
    replicas = [Alerts(database, deliver=False, box=BOX) for _ in range(3)]
    await asyncio.gather(*(a.seal_secrets() for a in replicas))  # concurrently, as replicas starting together
    secret, sealed, _ = stored(database, webhook_id)
    assert sealed and BOX.open(secret) == SECRET
    with database.engine.begin() as conn:
        assert seal_stored(conn, BOX) == 0  # nothing left to do
    assert stored(database, webhook_id)[0] == secret


@BOTH
async def test_a_secret_sealed_under_another_key_fails_classified_and_logs_once_without_it(database, caplog):
    with Receiver() as rx:
        add_webhook(database, rx.url)  # sealed under BOX
        delivery_id = fire(database)
        worker = DeliveryWorker(database, FAST, box=SecretBox("another-secret-key"))
        await worker.open()
        try:
            with caplog.at_level(logging.DEBUG):
                await worker.run_once()
        finally:
            await worker.stop()
    assert rx.received == []  # never sent unsigned, nor signed with something else
    (row,) = deliveries(database)
    assert row.id == delivery_id and (row.status, row.attempts, row.last_status_code) == ("pending", 1, None)
    assert row.last_error.startswith("secret: sealed under another secret key")
    lines = [r.getMessage() for r in caplog.records if delivery_id in r.getMessage()]
    assert len(lines) == 1 and "secret: sealed under another secret key" in lines[0]
    assert not any(SECRET in r.getMessage() or r.exc_info for r in caplog.records)


async def test_a_rotated_key_still_opens_and_start_up_reseals_under_the_new_one(database):
    webhook_id = add_webhook(database, "https://hooks.example.com/x", box=SecretBox("old-key"))
    rotated = SecretBox("new-key", previous=["old-key"])
    await Alerts(database, deliver=False, box=rotated).seal_secrets()
    secret, sealed, _ = stored(database, webhook_id)
    assert sealed and SecretBox("new-key").open(secret) == SECRET  # the old key can now be dropped
