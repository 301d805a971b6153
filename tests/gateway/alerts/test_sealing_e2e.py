"""Acceptance: a gateway started over a webhook row from before 0017 (plaintext secret) seals it at start-up, and
both it and a webhook created through the API sign their deliveries; no secret in a response, the audit log or
the log."""
import json
import logging

import httpx
from sqlalchemy import create_engine, select, text

from gateway.alerts.signing import verify
from gateway.db.models.webhook import Webhook
from gateway.main import create_app
from gateway.security.secret_box import SecretBox
from tests.gateway.alerts.receiver import Receiver
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import ADMIN_KEY, CannedBackend, LiveServer, migrate_and_seed

OLD = "whsec-legacy-plaintext-0123"
NEW = "whsec-through-the-api-4567"
SECRET_KEY = "e2e-secret-key"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


def test_plaintext_rows_are_sealed_at_start_and_every_secret_signs(tmp_path, gw_catalogue, caplog):
    url = f"sqlite:///{tmp_path / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    engine = create_engine(url)
    settings = gateway_settings(tmp_path, url, embeddings_enabled=False, cache_enabled=False, alerts_poll_s=0.05,
                                webhooks_allow_private=True, secret_key=SECRET_KEY)
    responses = []
    with caplog.at_level(logging.DEBUG), Receiver() as rx:
        with engine.begin() as conn:  # as a gateway before 0017 left it
            conn.execute(Webhook.__table__.insert(), {"id": "wh_legacy", "url": rx.url, "events": ["*"],
                                                      "secret": OLD, "secret_sealed": False, "thresholds": {}})
        with LiveServer(create_app(settings, backend=CannedBackend(tokens=8))) as gw:
            with engine.connect() as conn:
                secret, sealed = conn.execute(select(Webhook.secret, Webhook.secret_sealed)
                                              .where(Webhook.id == "wh_legacy")).one()
            assert sealed and OLD not in secret and SecretBox(SECRET_KEY).open(secret) == OLD
            r = httpx.post(f"{gw.url}/admin/webhooks", headers=ADMIN,
                           json={"url": rx.url, "events": ["budget.crossed"], "secret": NEW})
            assert r.status_code == 201, r.text
            responses.append(r)
            for webhook_id in ("wh_legacy", r.json()["id"]):
                responses.append(httpx.post(f"{gw.url}/admin/webhooks/{webhook_id}/test", headers=ADMIN))
                assert responses[-1].status_code == 202
            rx.wait_for(2)
            responses += [httpx.get(f"{gw.url}/admin/webhooks", headers=ADMIN),
                          httpx.get(f"{gw.url}/admin/audit", headers=ADMIN)]
    engine.dispose()
    by_webhook = {got.event["data"]["webhook_id"]: got for got in rx.received}
    assert verify(OLD, by_webhook["wh_legacy"].body, by_webhook["wh_legacy"].headers["x-tollgate-signature"])
    new = by_webhook[responses[0].json()["id"]]
    assert verify(NEW, new.body, new.headers["x-tollgate-signature"])
    with create_engine(url).connect() as conn:
        dump = json.dumps([list(map(str, row)) for t in ("webhooks", "audit_log")
                           for row in conn.execute(text(f"SELECT * FROM {t}"))])
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for secret in (OLD, NEW):
        assert secret not in dump and secret not in logged and all(secret not in r.text for r in responses)
