"""GET/PUT /admin/upstreams on a live gateway in front of a real OpenAI-protocol upstream process: a key set live
makes a refused upstream answer, is stored sealed, and never shows in a response, the audit log or the logs
(checked with a canary key after a 401, a 404, a timeout and validation failures)."""
from __future__ import annotations

import logging

import httpx
import pytest
from sqlalchemy import select

from gateway.catalogue import load_catalogue
from gateway.db.database import Database
from gateway.db.models.upstream_override import UpstreamOverride
from gateway.main import create_app
from gateway.settings import Settings
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import ADMIN_KEY, FP32, CannedBackend, LiveServer, free_port, make_tenant, migrate_and_seed
from tests.gateway.upstreams.conftest import UPSTREAM_KEY, Captured, UpstreamProcess, write_catalogue

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
MSG = [{"role": "user", "content": "Hi."}]
CANARY = "sk-canary-admin-set-key-7f6e5d4c3b2a"  # set live; the fake refuses it (401 quoting it)



@pytest.fixture(scope="module")
def upstream():
    proc = UpstreamProcess("tests.gateway.upstreams.fake_openai", UPSTREAM_KEY)
    yield proc
    proc.kill()


@pytest.fixture(scope="module")
def gw(tmp_path_factory, upstream):
    tmp = tmp_path_factory.mktemp("admin-upstreams")
    fast = {"timeout_s": 10, "connect_timeout_s": 1, "first_token_timeout_s": 1.0, "idle_timeout_s": 1.0}
    extra = {"upstreams": {"lab": {"protocol": "openai", "base_url": f"{upstream.url}/v1", **fast}},  # no key yet
             "models": {"lab-chat": {"price": {"input_per_million": 1}, "versions": {
                 "v1": {"upstream": "lab", "model": "echo"}, "silent": {"upstream": "lab", "model": "silent"}}}}}
    catalogue = write_catalogue(tmp, Settings().catalogue, extra)
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, load_catalogue(catalogue))
    settings = gateway_settings(tmp, url, catalogue=str(catalogue), embeddings_enabled=False, cache_enabled=False)
    captured = Captured()
    with LiveServer(create_app(settings, backend=CannedBackend(versions=[FP32]))) as server:
        ours = logging.getLogger("tollgate")
        level, _ = ours.level, ours.setLevel(logging.DEBUG)
        for name in ("tollgate", "gateway", ""):
            logging.getLogger(name).addHandler(captured)
        try:
            yield server, url, captured
        finally:
            for name in ("tollgate", "gateway", ""):
                logging.getLogger(name).removeHandler(captured)
            ours.setLevel(level)


def put(server, name, body):
    return httpx.put(f"{server.url}/admin/upstreams/{name}", json=body, headers=ADMIN, timeout=10)


def chat(server, key, model="lab-chat"):
    return httpx.post(f"{server.url}/v1/chat/completions", json={"model": model, "messages": MSG, "max_tokens": 3},
                      headers={"Authorization": f"Bearer {key}"}, timeout=30)


def test_a_key_set_live_is_used_sealed_and_never_shown(gw, upstream):
    server, url, captured = gw
    _, key = make_tenant(url)
    assert chat(server, key).status_code == 502  # the upstream refuses a request without its key

    r = put(server, "lab", {"api_key": CANARY})  # a wrong key: the upstream's 401 quotes it
    assert r.status_code == 200 and r.json()["has_api_key"] is True and CANARY not in r.text
    refused = chat(server, key)
    assert refused.status_code == 502 and CANARY not in refused.text
    assert put(server, "nowhere", {"api_key": CANARY}).status_code == 404  # 404: no such upstream
    for bad in ({"api_key": CANARY, "timeout_s": -1}, {"api_key": CANARY, "base_url": "ftp://x"},
                {"api_key": CANARY, "extra": CANARY}, {"api_key": 12345}, {}):
        r = put(server, "lab", bad)
        assert r.status_code == 400 and CANARY not in r.text and "12345" not in r.text, r.text
    silent = chat(server, key, "lab-chat@silent")
    assert silent.status_code in (502, 504) and CANARY not in silent.text

    r = put(server, "lab", {"api_key": UPSTREAM_KEY, "timeout_s": 20})
    assert r.status_code == 200 and r.json()["timeout_s"] == 20 and r.json()["circuit"] == "closed"
    assert chat(server, key).json()["choices"][0]["message"]["content"] == "tok0 tok1 tok2 "

    listed = httpx.get(f"{server.url}/admin/upstreams", headers=ADMIN).json()["data"]
    (lab,) = [u for u in listed if u["name"] == "lab"]
    assert lab["protocol"] == "openai" and lab["base_url"] == f"{upstream.url}/v1" and lab["healthy"] is True
    assert lab["models"] == ["lab-chat@v1", "lab-chat@silent"]
    audit = httpx.get(f"{server.url}/admin/audit", headers=ADMIN).text
    assert "upstream.update" in audit
    db = Database(url)
    try:
        with db.session() as session:
            row = session.scalar(select(UpstreamOverride).where(UpstreamOverride.name == "lab"))
    finally:
        db.dispose()
    assert row.api_key_encrypted and UPSTREAM_KEY not in row.api_key_encrypted  # sealed at rest
    for secret in (CANARY, UPSTREAM_KEY, row.api_key_encrypted):
        assert secret not in audit and secret not in httpx.get(f"{server.url}/admin/upstreams", headers=ADMIN).text
        assert not any(secret in line for line in captured.lines)


def test_a_new_base_url_applies_at_once_and_resets_the_circuit(gw, upstream):
    server, url, _ = gw
    _, key = make_tenant(url)
    assert put(server, "lab", {"api_key": UPSTREAM_KEY}).status_code == 200
    assert put(server, "lab", {"base_url": f"http://127.0.0.1:{free_port()}/v1/"}).status_code == 200
    assert chat(server, key).status_code == 503  # nothing listens there
    r = put(server, "lab", {"base_url": f"{upstream.url}/v1"})
    assert r.json()["circuit"] == "closed" and r.json()["last_error"] is None
    assert chat(server, key).status_code == 200


def test_admin_only(gw):
    server, url, _ = gw
    _, key = make_tenant(url)
    tenant = {"Authorization": f"Bearer {key}"}
    assert httpx.get(f"{server.url}/admin/upstreams", headers=tenant).status_code in (401, 403)
