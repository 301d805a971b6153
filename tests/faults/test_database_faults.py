"""The gateway through a PostgreSQL outage, on a PostgreSQL of its own that the tests stop and start.

While the database is down: chats with keys the gateway has seen keep succeeding and their ledger
rows go to the local spool; unknown keys, admin endpoints and anything else that needs the database
answer 503 database_unavailable with Retry-After (never a 500). Once it is back, the spool is
replayed and every request the client saw succeed is billed exactly once, also when the gateway
process was killed in between (the next process replays at start-up)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from gateway.catalogue import load_catalogue
from gateway.main import create_app
from gateway.settings import Settings
from tests.faults.servers import ThrowawayPostgres
from tests.gateway.support import (ADMIN_KEY, CannedBackend, LiveServer, free_port, make_tenant,
                                   migrate_and_seed, usage_rows)

ROOT = Path(__file__).resolve().parents[2]
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
BODY = {"model": "smollm2-135m-instruct", "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 8}
MADE_UP_KEY = "tg-" + "Z" * 43  # well formed, in no database


@pytest.fixture(scope="module")
def pg_template():
    """One cluster initialised, migrated and seeded, then stopped: each test's server starts from a copy."""
    server = ThrowawayPostgres().start()
    migrate_and_seed(server.url, load_catalogue(Settings().catalogue))
    server.stop("fast")
    yield server.data
    server.close()


@pytest.fixture
def pg(pg_template):
    server = ThrowawayPostgres(template=pg_template).start()
    yield server
    server.close()


def outage_settings(tmp: Path, url: str) -> Settings:
    return Settings(DATABASE_URL=url, REDIS_URL="", data_dir=tmp, admin_key=ADMIN_KEY, backend="inprocess",
                    log_level="WARNING", embeddings_enabled=False, cache_enabled=False,
                    spool_replay_interval_s=0.2)


def chat(url: str, key: str, *, stream: bool = False) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"}
    if not stream:
        return httpx.post(f"{url}/v1/chat/completions", json=BODY, headers=headers, timeout=30)
    body = {**BODY, "stream": True, "stream_options": {"include_usage": True}}
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, headers=headers, timeout=30) as r:
        r.read()
        assert r.status_code != 200 or r.text.rstrip().endswith("data: [DONE]"), r.text
        return r


def succeeded(responses: list[httpx.Response]) -> list[str]:
    """The request ids of the answers the client got: what must be billed, once each."""
    assert all(r.status_code == 200 for r in responses), [(r.status_code, r.text) for r in responses]
    return [r.headers["x-request-id"] for r in responses]


def assert_database_unavailable(r: httpx.Response) -> None:
    assert r.status_code == 503, r.text
    assert r.json()["error"]["code"] == "database_unavailable" and r.json()["error"]["type"] == "server_error"
    assert int(r.headers["retry-after"]) >= 1


def spooled_lines(tmp: Path) -> int:
    return sum(len(p.read_bytes().splitlines()) for p in (tmp / "spool").glob("segment-*.jsonl"))


def wait_for(predicate, timeout_s: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def billed_exactly(url: str, tenant_id: str, request_ids: list[str], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while len(usage_rows(url, tenant_id)) < len(request_ids) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # anything billed twice would show up by now
    billed = [r.request_id for r in usage_rows(url, tenant_id)]
    assert len(billed) == len(set(billed)), "a request billed twice"
    assert set(billed) == set(request_ids), {"missing": set(request_ids) - set(billed),
                                             "unexpected": set(billed) - set(request_ids)}


@pytest.mark.postgres  # starts a PostgreSQL of its own (initdb, pg_ctl)
def test_chats_survive_an_outage_and_every_one_is_billed_once(pg, tmp_path):
    tenant_id, key = make_tenant(pg.url, monthly_token_budget=10**6)
    _, idle_key = make_tenant(pg.url, monthly_token_budget=10**6)
    with LiveServer(create_app(outage_settings(tmp_path, pg.url), backend=CannedBackend())) as gw:
        seen = succeeded([chat(gw.url, key), chat(gw.url, key, stream=True)])
        # Seen by the authenticator, but its month's budget counter was never started.
        assert httpx.get(f"{gw.url}/v1/models", headers={"Authorization": f"Bearer {idle_key}"}).status_code == 200
        billed_exactly(pg.url, tenant_id, seen)

        pg.stop()
        during = succeeded([chat(gw.url, key, stream=i % 2 == 1) for i in range(10)])
        seen += during
        assert_database_unavailable(chat(gw.url, MADE_UP_KEY))
        assert_database_unavailable(chat(gw.url, idle_key))  # the budget cannot be seeded: refused, not guessed
        assert_database_unavailable(httpx.get(f"{gw.url}/admin/tenants", headers=ADMIN))
        assert_database_unavailable(httpx.post(f"{gw.url}/admin/tenants", json={"name": "new"}, headers=ADMIN))
        assert_database_unavailable(httpx.get(f"{gw.url}/admin/bills?month=2026-11", headers=ADMIN))
        assert_database_unavailable(httpx.post(f"{gw.url}/admin/routes/chat/rollback", headers=ADMIN))
        assert httpx.get(f"{gw.url}/admin/routes/chat", headers=ADMIN).status_code == 200  # from memory
        ready = httpx.get(f"{gw.url}/readyz")  # still serving: degraded, not out of the load balancer
        assert ready.status_code == 200 and ready.json()["status"] == "degraded"
        assert ready.json()["checks"]["database"] is False
        wait_for(lambda: spooled_lines(tmp_path) >= len(during), what="rows in the spool")

        pg.start()
        billed_exactly(pg.url, tenant_id, seen)
        wait_for(lambda: spooled_lines(tmp_path) == 0, what="the spool to drain")
        assert httpx.get(f"{gw.url}/admin/tenants", headers=ADMIN).status_code == 200
        seen += succeeded([chat(gw.url, key)])
    billed_exactly(pg.url, tenant_id, seen)


class GatewayProcess:
    """`python -m tests.gateway.canned_server PORT`: a gateway process to kill."""

    def __init__(self, tmp: Path, url: str) -> None:
        self.url = f"http://127.0.0.1:{free_port()}"
        env = {**os.environ, "DATABASE_URL": url, "REDIS_URL": "", "TOLLGATE_ADMIN_KEY": ADMIN_KEY,
               "TOLLGATE_DATA_DIR": str(tmp), "TOLLGATE_LOG_LEVEL": "WARNING", "HF_HUB_OFFLINE": "1",
               "TOLLGATE_SPOOL_REPLAY_INTERVAL_S": "0.2"}
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.gateway.canned_server", self.url.rsplit(":", 1)[1]],
                                     cwd=ROOT, env=env)
        try:
            wait_for(self._ready, timeout_s=120, what="the gateway process")
        except BaseException:
            self.kill()
            raise

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"the gateway process exited with {self.proc.returncode}")
        try:
            return httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(60)


@pytest.mark.postgres  # starts a PostgreSQL of its own (initdb, pg_ctl)
@pytest.mark.parametrize("how", ["killed", "stopped"])
def test_rows_spooled_before_a_gateway_restart_are_billed_after_it(pg, tmp_path, how):
    tenant_id, key = make_tenant(pg.url)
    first = GatewayProcess(tmp_path, pg.url)
    try:
        seen = succeeded([chat(first.url, key)])
        billed_exactly(pg.url, tenant_id, seen)  # so the spool holds exactly the outage's rows
        pg.stop()
        during = succeeded([chat(first.url, key, stream=i % 2 == 0) for i in range(6)])
        seen += during
        if how == "killed":
            # A crash: whatever the ledger had made durable (spooled and fsync'd) must survive it.
            wait_for(lambda: spooled_lines(tmp_path) == len(during), what="rows in the spool")
            first.kill(signal.SIGKILL)
        else:
            first.kill(signal.SIGTERM)  # a shutdown drains the ledger's queue into the spool
            assert spooled_lines(tmp_path) == len(during)
    finally:
        first.kill()
    pg.start()
    second = GatewayProcess(tmp_path, pg.url)  # replays what the first one spooled, at start-up
    try:
        billed_exactly(pg.url, tenant_id, seen)
        wait_for(lambda: spooled_lines(tmp_path) == 0, what="the spool to drain")
        rows = usage_rows(pg.url, tenant_id)
        assert all(r.cost is not None and r.cost > 0 for r in rows)
        assert not (tmp_path / "spool" / "rejected.jsonl").exists()
    finally:
        second.kill(signal.SIGTERM)


def test_semantic_cache_persistence_is_best_effort_but_invalidation_is_not(tmp_path):
    """Storing a cached answer with the database unreachable is logged and skipped (the entry
    serves from memory); deleting one is an error the admin API turns into a 503."""
    import numpy as np
    from sqlalchemy.exc import OperationalError

    from gateway.crud.semantic_cache import CacheRepository
    from gateway.cache.types import CachedAnswer, CacheEntry
    from gateway.db.database import Database

    closed = Database(f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/nothing")
    try:
        repo = CacheRepository(closed.engine)
        vector = np.ones(4, dtype=np.float32) / 2
        entry = CacheEntry(id="e1", tenant_id="t", model="m", namespace="ns", exact_key="k", question="q?",
                           answer=CachedAnswer("a", 1, 1, "stop"), vector=vector, created_at=time.time(),
                           expires_at=None)
        repo.save(entry)
        with pytest.raises(OperationalError):
            repo.delete(entry_ids=["e1"])
    finally:
        closed.dispose()


@pytest.mark.postgres  # starts a PostgreSQL of its own (initdb, pg_ctl)
def test_spooled_rows_are_json_lines(pg, tmp_path):
    """The spool is plain JSON lines an operator can read (and, in a pinch, load by hand)."""
    tenant_id, key = make_tenant(pg.url)
    with LiveServer(create_app(outage_settings(tmp_path, pg.url), backend=CannedBackend())) as gw:
        seen = succeeded([chat(gw.url, key)])
        billed_exactly(pg.url, tenant_id, seen)
        pg.stop()
        [rid] = succeeded([chat(gw.url, key)])
        wait_for(lambda: spooled_lines(tmp_path) == 1, what="the row in the spool")
        [line] = [json.loads(x) for p in (tmp_path / "spool").glob("segment-*.jsonl")
                  for x in p.read_text().splitlines()]
        assert (line["request_id"], line["tenant_id"], line["prompt_tokens"], line["completion_tokens"]) == (
            rid, tenant_id, 2, 8)
        pg.start()
        billed_exactly(pg.url, tenant_id, [*seen, rid])


async def test_error_handlers_database_down_and_ledger_full_are_503_a_bad_statement_is_not():
    from fastapi import FastAPI
    from sqlalchemy.exc import IntegrityError, OperationalError

    from gateway.api.errors import install_error_handlers
    from gateway.billing.ledger import LedgerFull

    app = FastAPI()
    install_error_handlers(app)
    raising = {"/down": OperationalError("SELECT 1", {}, ConnectionRefusedError("refused")),
               "/full": LedgerFull("no room"),
               "/bad": IntegrityError("INSERT", {}, Exception("duplicate key"))}
    for path, error in raising.items():
        app.add_api_route(path, _raiser(error))
    transport = httpx.ASGITransport(app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as http:
        assert_database_unavailable(await http.get("/down"))
        full = await http.get("/full")
        assert full.status_code == 503 and full.json()["error"]["code"] == "ledger_unavailable"
        assert int(full.headers["retry-after"]) >= 1
        assert (await http.get("/bad")).status_code == 500


def _raiser(error: Exception):
    async def route():
        raise error
    return route
