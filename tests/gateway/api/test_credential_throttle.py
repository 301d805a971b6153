"""The failed-attempt throttle through a live gateway: bad keys from one address never lock out valid ones
(tenant, admin, metrics, console sign-in); behind a trusted proxy the forwarded address is the one counted,
and from anyone else X-Forwarded-For changes nothing."""
from __future__ import annotations

import secrets

import httpx
import pytest

from gateway.cli.serve import proxy_options
from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import ADMIN_KEY, METRICS, CannedBackend, LiveServer, make_tenant, migrate_and_seed

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
CHAT = {"model": "smollm2-135m-instruct", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


def _made_up() -> dict:
    return {"Authorization": "Bearer tg-" + secrets.token_urlsafe(32)}  # well-formed: it reaches a lookup


@pytest.fixture(scope="module")
def db(tmp_path_factory, gw_catalogue):
    tmp = tmp_path_factory.mktemp("throttle")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    return tmp, url


def _serve(db, **settings) -> LiveServer:
    tmp, url = db
    s = gateway_settings(tmp, url, embeddings_enabled=False, cache_enabled=False, **settings)
    return LiveServer(create_app(s, backend=CannedBackend()), **proxy_options(s))


@pytest.fixture(scope="module")
def direct(db):
    """Trusts no proxy: every client counts as the address it connects from."""
    with _serve(db, forwarded_allow_ips="") as server:
        yield server


@pytest.fixture(scope="module")
def proxied(db):
    """Behind a proxy on 127.0.0.1 (the tests' client): X-Forwarded-For names the client."""
    with _serve(db, forwarded_allow_ips="127.0.0.1") as server:
        yield server


def test_25_bad_keys_from_one_address_lock_out_no_valid_key(direct, db):
    _, key = make_tenant(db[1])
    with httpx.Client(base_url=direct.url, timeout=10) as http:
        codes = [http.post("/v1/chat/completions", headers=_made_up(), json=CHAT).status_code for _ in range(25)]
        assert codes[:20] == [401] * 20 and set(codes[20:]) == {429}
        refused = http.post("/v1/chat/completions", headers=_made_up(), json=CHAT)
        assert refused.json()["error"]["code"] == "too_many_failed_authentications"
        assert int(refused.headers["retry-after"]) >= 1
        # The same address, valid credentials: all pass.
        ok = http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"}, json=CHAT)
        assert ok.status_code == 200, ok.text
        assert http.get("/admin/tenants", headers=ADMIN).status_code == 200
        assert http.get("/metrics", headers=METRICS).status_code == 200
        # Bad admin keys and metrics tokens from it are still refused, with the throttle's 429.
        assert http.get("/admin/tenants", headers={"Authorization": "Bearer tga-" + "y" * 40}).status_code == 429
        assert http.get("/metrics", headers={"Authorization": "Bearer tgm-" + "y" * 40}).status_code == 429


def test_metrics_token_guesses_are_throttled(proxied):
    guesser = {"X-Forwarded-For": "198.51.100.21"}
    with httpx.Client(base_url=proxied.url, timeout=10) as http:
        codes = [http.get("/metrics", headers={**guesser, "Authorization": f"Bearer tgm-{secrets.token_hex(20)}"})
                 .status_code for _ in range(22)]
        assert codes[:20] == [401] * 20 and set(codes[20:]) == {429}
        assert http.get("/metrics", headers={**guesser, **METRICS}).status_code == 200


def test_the_forwarded_address_counts_behind_a_trusted_proxy(proxied):
    with httpx.Client(base_url=proxied.url, timeout=10) as http:
        for _ in range(21):
            last = http.post("/v1/chat/completions", headers={**_made_up(), "X-Forwarded-For": "198.51.100.31"},
                             json=CHAT)
        assert last.status_code == 429
        # Another client behind the same proxy is not the one that failed.
        other = http.post("/v1/chat/completions", headers={**_made_up(), "X-Forwarded-For": "198.51.100.32"},
                          json=CHAT)
        assert other.status_code == 401


def test_x_forwarded_for_from_an_untrusted_peer_changes_nothing(db):
    with _serve(db, forwarded_allow_ips="") as server, httpx.Client(base_url=server.url, timeout=10) as http:
        codes = [http.post("/v1/chat/completions", json=CHAT,
                           headers={**_made_up(), "X-Forwarded-For": f"203.0.113.{i}"}).status_code
                 for i in range(22)]
    assert codes[:20] == [401] * 20 and set(codes[20:]) == {429}  # all counted against the real peer


def _sign_in(http: httpx.Client, credential: str, address: str) -> httpx.Response:
    forwarded = {"X-Forwarded-For": address}
    form = http.get("/console/login", headers=forwarded)
    token = form.text.split('name="csrf_token" value="')[1].split('"')[0]
    return http.post("/console/login", headers=forwarded, data={"credential": credential, "csrf_token": token})


def test_console_sign_in_uses_the_same_throttle(proxied, db):
    _, key = make_tenant(db[1])
    address = "198.51.100.41"
    with httpx.Client(base_url=proxied.url, timeout=10) as http:
        codes = [_sign_in(http, "tg-" + secrets.token_urlsafe(32), address).status_code for _ in range(21)]
        assert codes[:20] == [401] * 20 and codes[20] == 429
        assert _sign_in(http, ADMIN_KEY, address).status_code == 303  # signed in, from the throttled address
        http.cookies.clear()
        assert _sign_in(http, key, address).status_code == 303
        # Its bad API keys count there too: the API answers this address's next bad key with 429.
        r = http.post("/v1/chat/completions", headers={**_made_up(), "X-Forwarded-For": address}, json=CHAT)
        assert r.status_code == 429
