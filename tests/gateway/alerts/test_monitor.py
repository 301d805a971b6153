"""The periodic checks: version.unhealthy once per outage, and each webhook's SLO thresholds over the ledger's
window, once per crossing, re-armed when back under."""
import json
from datetime import datetime, timedelta

from gateway.alerts.config import AlertsConfig
from gateway.alerts.monitor import Monitor
from gateway.alerts.slo import p99
from gateway.crud.usage import insert_usage
from gateway.db.models.tenant import Tenant
from gateway.db.types import utcnow
from gateway.domain.alert_events import SLO_ERROR_RATE, SLO_TTFT_P99, VERSION_UNHEALTHY
from tests.gateway.alerts.helpers import add_webhook, deliveries

CONFIG = AlertsConfig(check_s=0.05, slo_window_s=60, slo_min_requests=10)


def usage(database, n: int, *, errors: int = 0, ttft_ms: float = 100.0, at: datetime | None = None) -> None:
    at = at or utcnow()
    with database.session() as session:
        if session.get(Tenant, "t") is None:
            session.add(Tenant(id="t", name="t"))
            session.commit()
    rows = [{"request_id": f"r-{at.timestamp()}-{i}", "tenant_id": "t", "key_id": None,
             "endpoint": "/v1/chat/completions", "model": "m", "prompt_tokens": 1, "completion_tokens": 1,
             "status": "error" if i < errors else "ok", "ttft_ms": ttft_ms, "created_at": at, "cost": None,
             "currency": "USD"} for i in range(n)]
    with database.engine.begin() as conn:
        insert_usage(conn, rows=rows)


def data(database, event_type):
    return [json.loads(d.body)["data"] for d in deliveries(database, event_type)]


def test_p99_is_nearest_rank():
    assert p99([]) is None
    assert p99([5.0]) == 5.0
    assert p99([float(i) for i in range(1, 101)]) == 99.0
    assert p99([float(i) for i in range(1, 201)]) == 198.0


async def test_a_version_without_healthy_replicas_alerts_once_per_outage(database):
    add_webhook(database, "http://127.0.0.1:9/h", [VERSION_UNHEALTHY])
    health = {"m@a": True, "m@b": False}

    async def report():
        return dict(health)
    monitor = Monitor(database, CONFIG, health=report, pool="ray:x")
    assert await monitor.check_once() == 1
    assert await monitor.check_once() == 0  # still down: once
    health["m@b"] = True
    assert await monitor.check_once() == 0  # back: re-armed
    health["m@b"] = False
    assert await monitor.check_once() == 1
    assert data(database, VERSION_UNHEALTHY) == [{"version": "m@b", "pool": "ray:x"}] * 2


async def test_a_failing_health_call_is_logged_and_the_slo_check_still_runs(database):
    add_webhook(database, "http://127.0.0.1:9/h", ["*"], thresholds={"error_rate": 0.1})
    usage(database, 10, errors=5)

    async def broken():
        raise RuntimeError("pool unreachable")
    assert await Monitor(database, CONFIG, health=broken).check_once() == 1


async def test_error_rate_fires_once_per_crossing_for_the_webhooks_that_set_it(database):
    loud = add_webhook(database, "http://127.0.0.1:9/a", [SLO_ERROR_RATE], thresholds={"error_rate": 0.2})
    add_webhook(database, "http://127.0.0.1:9/b", [SLO_ERROR_RATE], thresholds={"error_rate": 0.5})
    add_webhook(database, "http://127.0.0.1:9/c", [SLO_TTFT_P99], thresholds={"error_rate": 0.01})  # not subscribed
    monitor = Monitor(database, CONFIG)
    usage(database, 5, errors=5)
    assert await monitor.check_once() == 0  # 5 rows: too few for a verdict
    usage(database, 5)  # 10 rows, 50 % errors: over 0.2, not over 0.5
    assert await monitor.check_once() == 1
    assert await monitor.check_once() == 0  # still over: once
    (fired,) = deliveries(database, SLO_ERROR_RATE)
    assert fired.webhook_id == loud
    assert json.loads(fired.body)["data"] == {"error_rate": 0.5, "threshold": 0.2, "window_s": 60, "requests": 10}
    usage(database, 40)  # 5 of 50: 10 %, back under: re-armed
    assert await monitor.check_once() == 0
    usage(database, 20, errors=20)  # 25 of 70: over again
    assert await monitor.check_once() == 1
    assert len(deliveries(database, SLO_ERROR_RATE)) == 2


async def test_ttft_p99_over_the_window_only(database):
    add_webhook(database, "http://127.0.0.1:9/a", ["*"], thresholds={"ttft_p99_ms": 500})
    usage(database, 20, ttft_ms=5000, at=utcnow() - timedelta(minutes=5))  # out of the window
    usage(database, 20, ttft_ms=100)
    monitor = Monitor(database, CONFIG)
    assert await monitor.check_once() == 0
    usage(database, 1, ttft_ms=900)  # 1 of 21 slow: the p99 is it
    assert await monitor.check_once() == 1
    assert data(database, SLO_TTFT_P99)[0]["ttft_p99_ms"] == 900


async def test_the_monitor_loop_waits_a_period_then_checks(database):
    add_webhook(database, "http://127.0.0.1:9/h", [VERSION_UNHEALTHY])
    import asyncio

    async def down():
        return {"m@a": False}
    monitor = Monitor(database, CONFIG, health=down)
    await monitor.start()
    assert deliveries(database) == []  # nothing at start-up
    async with asyncio.timeout(10):
        while not deliveries(database):
            await asyncio.sleep(0.02)
    await asyncio.sleep(0.2)  # more periods: still one
    await monitor.stop()
    assert len(deliveries(database, VERSION_UNHEALTHY)) == 1


async def test_settled_deliveries_past_retention_are_pruned_pending_ones_kept(database):
    from sqlalchemy import update

    from gateway.alerts.outbox import emit
    from gateway.db.models.webhook_delivery import WebhookDelivery
    from gateway.domain.alert_events import AlertEvent
    add_webhook(database, "http://127.0.0.1:9/h", ["*"])
    old = utcnow() - timedelta(days=31)
    with database.engine.begin() as conn:
        ids = [emit(conn, AlertEvent(VERSION_UNHEALTHY, {"n": n}), now=old)[0] for n in range(3)]
        emit(conn, AlertEvent(VERSION_UNHEALTHY, {"n": 3}))  # recent
        conn.execute(update(WebhookDelivery).where(WebhookDelivery.id == ids[0]).values(status="delivered"))
        conn.execute(update(WebhookDelivery).where(WebhookDelivery.id == ids[1]).values(status="failed"))
    await Monitor(database, CONFIG).check_once()
    left = {d.id: d.status for d in deliveries(database)}
    assert ids[0] not in left and ids[1] not in left and left[ids[2]] == "pending" and len(left) == 2
