"""Signing out of the console on one replica ends the session on every replica (the event bus carries it)."""
from __future__ import annotations

import time
import uuid

import httpx

from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import ADMIN_KEY, CannedBackend, LiveServer, migrate_and_seed

REDIS = "redis://127.0.0.1:6379/0"


def sign_in(server) -> str:
    form = httpx.get(f"{server.url}/console/login", timeout=10)
    token = form.text.split('name="csrf_token" value="')[1].split('"')[0]
    r = httpx.post(f"{server.url}/console/login", data={"credential": ADMIN_KEY, "csrf_token": token},
                   cookies={"tollgate_console_login": form.cookies["tollgate_console_login"]}, timeout=10)
    assert r.status_code == 303, r.text
    return r.cookies["tollgate_console"]


def opens(server, cookie: str) -> bool:
    r = httpx.get(f"{server.url}/console/tenants", cookies={"tollgate_console": cookie}, timeout=10)
    return r.status_code == 200


def test_a_sign_out_on_one_replica_is_refused_by_the_other(tmp_path, gw_catalogue):
    url = f"sqlite:///{tmp_path / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    prefix = f"tollgate-test:{uuid.uuid4().hex[:8]}"  # this test's own channel on the shared Redis
    settings = [gateway_settings(tmp_path / n, url, redis_url=REDIS, events_prefix=prefix, embeddings_enabled=False,
                                 cache_enabled=False, batch_runner_enabled=False, alerts_worker_enabled=False)
                for n in ("a", "b")]
    for s in settings:
        s.data_dir.mkdir()
    with LiveServer(create_app(settings[0], backend=CannedBackend())) as a, \
            LiveServer(create_app(settings[1], backend=CannedBackend())) as b:
        cookie = sign_in(a)
        assert opens(a, cookie) and opens(b, cookie)  # one signed session, good on every replica
        page = httpx.get(f"{a.url}/console/tenants", cookies={"tollgate_console": cookie}, timeout=10)
        token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
        out = httpx.post(f"{a.url}/console/logout", data={"csrf_token": token},
                         cookies={"tollgate_console": cookie}, timeout=10)
        assert out.status_code == 303 and not opens(a, cookie)
        deadline = time.monotonic() + 5
        while opens(b, cookie):
            assert time.monotonic() < deadline, "replica b still accepts a signed-out session"
            time.sleep(0.05)
