"""The sign-in form refuses what a browser would never send, with the form's own answer, never a 500."""
from __future__ import annotations

import httpx

from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import ADMIN_KEY, CannedBackend, LiveServer, migrate_and_seed


def test_a_csrf_token_sent_as_a_file_is_refused_like_a_missing_one(tmp_path, gw_catalogue):
    url = f"sqlite:///{tmp_path / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    settings = gateway_settings(tmp_path, url, embeddings_enabled=False, cache_enabled=False,
                                batch_runner_enabled=False, alerts_worker_enabled=False)
    with LiveServer(create_app(settings, backend=CannedBackend())) as server:
        form = httpx.get(f"{server.url}/console/login", timeout=10)
        r = httpx.post(f"{server.url}/console/login", data={"credential": ADMIN_KEY},
                       files={"csrf_token": ("token.txt", b"not a token")},
                       cookies={"tollgate_console_login": form.cookies["tollgate_console_login"]}, timeout=10)
    assert r.status_code == 403 and "security token" in r.text
