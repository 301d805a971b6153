"""Live upstream changes across replicas: two gateways' LiveUpstreams over one database; one stores a change,
the other applies it when the event bus delivers UpstreamChanged (ReplicaHandlers)."""
from __future__ import annotations

import pytest

from gateway.audit.auditor import Auditor
from gateway.catalogue import parse_catalogue
from gateway.db.database import Database
from gateway.db.migrate import upgrade
from gateway.events import UpstreamChanged
from gateway.events.handlers import ReplicaHandlers
from gateway.security.secret_box import SecretBox
from gateway.upstreams.backend import UpstreamBackend
from gateway.upstreams.live import LiveUpstreams

pytestmark = pytest.mark.asyncio(loop_scope="session")

CATALOGUE = parse_catalogue({
    "upstreams": {"api": {"protocol": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "K"}},
    "models": {"m": {"price": {"input_per_million": 1}, "versions": {"v": {"upstream": "api", "model": "x"}}}},
})


def replica(db: Database, secret: str = "shared-secret") -> LiveUpstreams:
    return LiveUpstreams(db, UpstreamBackend(CATALOGUE, environ={"K": "sk-from-env"}), SecretBox(secret))


async def test_a_change_on_one_replica_reaches_another(tmp_path):
    url = f"sqlite:///{tmp_path / 't.db'}"
    upgrade(url)
    db = Database(url)
    try:
        a, b = replica(db), replica(db)
        await a.load_all(), await b.load_all()
        assert b.backend.upstreams["api"].config.api_key == "sk-from-env"
        b.backend.upstreams["api"].breaker.failed()
        for _ in range(5):
            b.backend.upstreams["api"].breaker.failed()
        assert b.backend.upstreams["api"].breaker.state == "open"

        a.update("api", base_url="http://127.0.0.1:10/v1", api_key="sk-new", timeout_s=5.0,
                 auditor=Auditor(actor="admin:test"))
        handlers = ReplicaHandlers(router=None, authenticator=None, upstreams=b)
        await handlers.apply(UpstreamChanged("api"))
        config = b.backend.upstreams["api"].config
        assert (config.base_url, config.api_key, config.timeout_s) == ("http://127.0.0.1:10/v1", "sk-new", 5.0)
        assert b.backend.upstreams["api"].breaker.state == "closed"  # reset
        assert "sk-new" not in repr(config)

        c = replica(db, secret="another-secret")  # cannot open the stored key: keeps the catalogue's
        await c.load_all()
        assert c.backend.upstreams["api"].config.api_key == "sk-from-env"
        assert c.backend.upstreams["api"].config.base_url == "http://127.0.0.1:10/v1"
    finally:
        db.dispose()
