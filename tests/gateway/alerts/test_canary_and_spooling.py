"""canary.rolled_back from the route store's transaction, and ledger.spooling from the ledger's outage."""
import json
from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy.exc import OperationalError

import gateway.audit.table  # registers the audit tables for the database fixture
import gateway.routing.tables  # noqa: F401  (and the route tables)
from gateway.alerts import Alerts, AlertsConfig
from gateway.billing.ledger import Ledger, UsageRecord
from gateway.billing.prices import PriceBook
from gateway.billing.spool import Spool, SpoolConfig
from gateway.catalogue import parse_catalogue
from gateway.domain.alert_events import CANARY_ROLLED_BACK, LEDGER_SPOOLING
from gateway.routing.canary import RollbackPolicy
from gateway.routing.router import Router
from gateway.routing.sql_store import SqlRouteStore
from tests.gateway.alerts.conftest import BOTH
from tests.gateway.alerts.helpers import BOX, add_webhook, deliveries
from tests.gateway.alerts.receiver import Receiver, arrived
from tests.gateway.routing.conftest import BF16, FP32, raw_catalogue

FAST = AlertsConfig(poll_s=0.02, lease_s=5.0, timeout_s=2.0, backoff_s=0.05, backoff_max_s=0.1,
                    allow_private=True)  # the receiver is on this machine


def router_with_alerts(database, alerts: Alerts) -> Router:
    return Router(parse_catalogue(raw_catalogue()), store=SqlRouteStore(database, on_save=alerts.on_route_saved),
                  rollback=RollbackPolicy(min_samples=5))


@BOTH
def test_an_automatic_rollback_writes_one_event_with_the_route_change(database):
    add_webhook(database, "http://127.0.0.1:9/h", [CANARY_ROLLED_BACK])
    router = router_with_alerts(database, Alerts(database, deliver=False, box=BOX))
    for _ in range(20):
        router.observe(FP32, ok=True, ttft_s=0.05, latency_s=0.1)
    for _ in range(8):  # rolled back at the 5th; later verdicts find nothing left to change
        router.observe(BF16, ok=False, ttft_s=None, latency_s=0.01)
    assert router.route("chat")["weights"][BF16] == 0
    (row,) = deliveries(database, CANARY_ROLLED_BACK)
    data = json.loads(row.body)["data"]
    assert data["alias"] == "chat" and data["versions"] == [BF16] and "error rate" in data["reason"]
    assert data["weights"] == {FP32: 100, BF16: 0}


def test_an_operators_rollback_alerts_nobody(database):
    add_webhook(database, "http://127.0.0.1:9/h", ["*"])
    router = router_with_alerts(database, Alerts(database, deliver=False, box=BOX))
    router.rollback("chat", actor="alice")
    assert deliveries(database) == []


def test_a_failing_alert_never_blocks_the_rollback(database, monkeypatch):
    from gateway.alerts import canary
    add_webhook(database, "http://127.0.0.1:9/h", ["*"])
    monkeypatch.setattr(canary, "emit", lambda *a, **k: 1 / 0)
    router = router_with_alerts(database, Alerts(database, deliver=False, box=BOX))
    for _ in range(5):
        router.observe(BF16, ok=False, ttft_s=None, latency_s=0.01)
    again = Router(parse_catalogue(raw_catalogue()), store=SqlRouteStore(database))
    assert again.route("chat")["weights"][BF16] == 0  # persisted all the same
    assert deliveries(database) == []


def _down(ledger: Ledger, monkeypatch, state: dict) -> None:
    real = ledger._insert

    def insert(batch):
        if state["down"]:
            raise OperationalError("INSERT INTO usage_ledger", {}, ConnectionRefusedError("connection refused"))
        real(batch)
    monkeypatch.setattr(ledger, "_insert", insert)
    monkeypatch.setattr(ledger, "_reachable", lambda: not state["down"])


def _rec(n: int) -> UsageRecord:
    return UsageRecord(request_id=f"r{n}", tenant_id="t", key_id=None, endpoint="/v1/chat/completions",
                       model="m", prompt_tokens=1, completion_tokens=1, created_at=datetime(2026, 12, 1, tzinfo=UTC))


async def test_the_ledger_spooling_fires_once_per_outage_and_is_delivered_when_the_database_answers(
        database, tmp_path, monkeypatch):
    from gateway.crud.prices import set_price
    from gateway.crud.tenants import create_tenant
    with database.session() as s:
        set_price(s, model="m", input_per_million=Decimal(1), output_per_million=Decimal(1),
                  effective_from=datetime(2026, 1, 1, tzinfo=UTC))
        tenant = create_tenant(s, name="t").id
    with Receiver() as rx:
        add_webhook(database, rx.url, [LEDGER_SPOOLING])
        alerts = Alerts(database, FAST, box=BOX)
        ledger = Ledger(database, PriceBook(database), spool=Spool(SpoolConfig(tmp_path / "spool")), linger_s=0,
                        retry_delay_s=0, replay_interval_s=0.05, after_insert=alerts.after_usage)
        ledger.listen_spooling(alerts.on_ledger_spooling)
        state = {"down": True}
        _down(ledger, monkeypatch, state)
        for n in range(3):  # one outage, three spooled batches: one event
            ledger.record(_with(tenant, n))
            await ledger.flush()
        assert ledger.spooled == 3 and len(alerts.pending) == 1
        await alerts.start()
        try:
            await arrived(rx, 1)  # the database is "down" for the ledger only: the outbox takes the event
            state["down"] = False
            assert await ledger.replay() == 3
            state["down"] = True  # a second outage is a second event
            ledger.record(_with(tenant, 9))
            await ledger.flush()
            await arrived(rx, 2)
        finally:
            await alerts.stop()
    events = rx.events()
    assert [e["type"] for e in events] == [LEDGER_SPOOLING] * 2 and events[0]["id"] != events[1]["id"]
    assert events[0]["data"]["reason"] == "OperationalError" and events[0]["data"]["spool_dir"].endswith("spool")


def _with(tenant: str, n: int) -> UsageRecord:
    rec = _rec(n)
    rec.tenant_id = tenant
    return rec
