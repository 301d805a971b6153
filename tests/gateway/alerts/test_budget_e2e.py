"""Acceptance: a tenant's requests through the gateway push its month past 50 % and 80 % of its budget, with
more requests after each crossing; a receiver started here gets exactly one signed budget.crossed per threshold."""
import time

import httpx

from gateway.alerts.signing import verify
from gateway.main import create_app
from tests.gateway.alerts.receiver import Receiver
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import ADMIN_KEY, CannedBackend, LiveServer, make_tenant, migrate_and_seed

SECRET = "whsec-acceptance-0123456789"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
BODY = {"model": "smollm2-135m-instruct", "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 8}


def test_one_signed_event_per_budget_threshold_through_the_api(tmp_path, gw_catalogue):
    url = f"sqlite:///{tmp_path / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)  # the 0010_webhooks migration included
    tenant_id, key = make_tenant(url, monthly_token_budget=200)  # 10 tokens a request: 2 prompt + 8 canned
    settings = gateway_settings(tmp_path, url, embeddings_enabled=False, cache_enabled=False, alerts_poll_s=0.05,
                                webhooks_allow_private=True)  # the receiver is on this machine
    with Receiver() as rx, LiveServer(create_app(settings, backend=CannedBackend(tokens=8))) as gw:
        r = httpx.post(f"{gw.url}/admin/webhooks", headers=ADMIN,
                       json={"url": rx.url, "events": ["budget.crossed"], "secret": SECRET})
        assert r.status_code == 201, r.text
        webhook_id = r.json()["id"]
        for _ in range(19):  # 190 of 200 tokens: 50 % at the 10th request, 80 % at the 16th, three more after it
            r = httpx.post(f"{gw.url}/v1/chat/completions", json=BODY, timeout=30,
                           headers={"Authorization": f"Bearer {key}"})
            assert r.status_code == 200, r.text
            assert r.json()["usage"]["total_tokens"] == 10
        rx.wait_for(2)
        deadline = time.monotonic() + 10
        while True:  # the worker records each answer just after it arrives
            listed = httpx.get(f"{gw.url}/admin/webhooks/{webhook_id}/deliveries", headers=ADMIN).json()["data"]
            if all(d["status"] == "delivered" for d in listed) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        time.sleep(0.5)  # several polls more: nothing else may arrive
    assert len(rx.received) == 2
    events = []
    for got in rx.received:
        assert verify(SECRET, got.body, got.headers["x-tollgate-signature"])
        assert got.headers["x-tollgate-event-id"] == got.event["id"]
        events.append(got.event)
    assert sorted(e["data"]["threshold"] for e in events) == [50, 80]
    assert all(e["type"] == "budget.crossed" and e["data"]["tenant_id"] == tenant_id for e in events)
    assert len({e["id"] for e in events}) == 2
    eighty = next(e for e in events if e["data"]["threshold"] == 80)
    assert 160 <= eighty["data"]["used_tokens"] < 200 and eighty["data"]["monthly_token_budget"] == 200
    assert sorted((d["status"], d["attempts"]) for d in listed) == [("delivered", 1)] * 2
