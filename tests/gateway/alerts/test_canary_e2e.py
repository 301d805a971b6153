"""The gateway's own wiring: a canary failing through the API is rolled back, and the receiver hears it once."""
import time

import httpx

from gateway.alerts.signing import verify
from gateway.main import create_app
from tests.gateway.alerts.receiver import Receiver
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import ADMIN_KEY, FP32, CannedBackend, LiveServer, make_tenant, migrate_and_seed

BF16 = "smollm2-135m-instruct@bf16"
SECRET = "whsec-acceptance-0123456789"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
BODY = {"model": "chat", "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4}


def test_an_automatic_rollback_reaches_the_receiver_once(tmp_path, gw_catalogue):
    url = f"sqlite:///{tmp_path / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    _, key = make_tenant(url)
    settings = gateway_settings(tmp_path, url, embeddings_enabled=False, cache_enabled=False, alerts_poll_s=0.05,
                                route_rollback_min_samples=3, webhooks_allow_private=True)  # a local receiver
    backend = CannedBackend(versions=[FP32, BF16], unavailable={BF16})
    with Receiver() as rx, LiveServer(create_app(settings, backend=backend)) as gw:
        r = httpx.post(f"{gw.url}/admin/webhooks", headers=ADMIN,
                       json={"url": rx.url, "events": ["canary.rolled_back"], "secret": SECRET})
        assert r.status_code == 201, r.text
        for _ in range(6):  # pinned to the failing canary: rolled back at the 3rd, the rest change nothing
            httpx.post(f"{gw.url}/v1/chat/completions", json=BODY, timeout=30,
                       headers={"Authorization": f"Bearer {key}", "x-tollgate-version": "bf16"})
        route = httpx.get(f"{gw.url}/admin/routes/chat", headers=ADMIN).json()
        assert route["weights"][BF16] == 0
        (got,) = rx.wait_for(1)
        time.sleep(0.5)  # several polls more: nothing else may arrive
    assert len(rx.received) == 1
    assert verify(SECRET, got.body, got.headers["x-tollgate-signature"])
    assert got.event["type"] == "canary.rolled_back"
    assert got.event["data"]["alias"] == "chat" and got.event["data"]["versions"] == [BF16]
