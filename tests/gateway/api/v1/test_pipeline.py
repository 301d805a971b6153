"""The generation pipeline's edges, driven through a live app over a scripted canned backend:
errors after a stream started, a budget that runs out mid-stream, fallbacks, no capacity,
timeouts, and draining in-flight streams on shutdown."""
from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import FP32, CannedBackend, LiveServer, make_tenant, migrate_and_seed, usage_rows

BF16 = "smollm2-135m-instruct@bf16"
MSG = [{"role": "user", "content": "Say hi."}]  # 2 canned prompt tokens
BODY = {"model": "smollm2-135m-instruct", "messages": MSG, "max_tokens": 8}


@pytest.fixture(scope="module")
def db(tmp_path_factory, gw_catalogue):
    tmp = tmp_path_factory.mktemp("pipeline")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    return tmp, url


def serve(db, backend: CannedBackend, **overrides) -> LiveServer:
    tmp, url = db
    settings = gateway_settings(tmp, url, embeddings_enabled=False, cache_enabled=False, **overrides)
    return LiveServer(create_app(settings, backend=backend))


def events(raw: str) -> list:
    out = []
    for line in raw.splitlines():
        if line.startswith("data: "):
            data = line[len("data: "):]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def stream(server: LiveServer, key: str, body: dict, headers: dict | None = None) -> tuple[int, list]:
    with httpx.stream("POST", f"{server.url}/v1/chat/completions", timeout=30,
                      json={**body, "stream": True, "stream_options": {"include_usage": True}},
                      headers={"Authorization": f"Bearer {key}", **(headers or {})}) as r:
        return r.status_code, events(r.read().decode())


def test_failure_after_the_stream_started_ends_with_an_error_event(db):
    tenant_id, key = make_tenant(db[1])
    with serve(db, CannedBackend(fail_after=2)) as server:
        status, evs = stream(server, key, BODY)
    assert status == 200
    assert evs[-1] == "[DONE]"
    assert evs[-2]["error"]["code"] == "generation_failed"
    assert evs[-3]["usage"]["completion_tokens"] == 2  # what it is billed for, before the error
    (row,) = usage_rows(db[1], tenant_id)
    assert row.status == "error" and row.completion_tokens == 2


def test_budget_running_out_mid_stream(db):
    tenant_id, key = make_tenant(db[1], monthly_token_budget=7)  # 2 prompt + 5 of the 8 asked for
    with serve(db, CannedBackend()) as server:
        refused = httpx.post(f"{server.url}/v1/chat/completions", json=BODY, headers={"Authorization": f"Bearer {key}"})
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "insufficient_quota"
        status, evs = stream(server, key, BODY)
        assert stream(server, key, BODY)[0] == 429  # nothing left
    assert status == 200
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in evs[:-2] if e.get("choices"))
    assert text == "a" * 5
    assert evs[-3]["usage"]["total_tokens"] == 7
    assert evs[-2]["error"]["code"] == "insufficient_quota" and evs[-1] == "[DONE]"
    (row,) = usage_rows(db[1], tenant_id)
    assert row.status == "truncated"
    assert row.prompt_tokens + row.completion_tokens == 7


def test_unavailable_version_falls_back(db):
    tenant_id, key = make_tenant(db[1])
    backend = CannedBackend(versions=[FP32, BF16], unavailable={BF16})
    with serve(db, backend) as server:
        r = httpx.post(f"{server.url}/v1/chat/completions", json={**BODY, "model": "chat"},
                       headers={"Authorization": f"Bearer {key}", "x-tollgate-version": BF16})
    assert r.status_code == 200, r.text
    assert r.headers["x-tollgate-model"] == FP32
    assert [row.version for row in usage_rows(db[1], tenant_id)] == [FP32]


def test_no_capacity_is_503_and_releases_the_reservation(db):
    tenant_id, key = make_tenant(db[1], tpm=20)
    with serve(db, CannedBackend(overloaded={FP32})) as server:
        for _ in range(3):  # each would reserve 10 of the 20 tokens if refusals kept them
            r = httpx.post(f"{server.url}/v1/chat/completions", json=BODY, headers={"Authorization": f"Bearer {key}"})
            assert r.status_code == 503 and r.json()["error"]["code"] == "no_capacity"
            assert r.headers["retry-after"] == "1"
    with serve(db, CannedBackend()) as server:
        ok = httpx.post(f"{server.url}/v1/chat/completions", json=BODY, headers={"Authorization": f"Bearer {key}"})
        assert ok.status_code == 200
    assert len(usage_rows(db[1], tenant_id)) == 1


def test_timeout_is_504(db):
    tenant_id, key = make_tenant(db[1])
    with serve(db, CannedBackend(first_delay_s=2.0), request_timeout_s=0.3) as server:
        r = httpx.post(f"{server.url}/v1/chat/completions", json=BODY, headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 504 and r.json()["error"]["code"] == "timeout"
    assert usage_rows(db[1], tenant_id) == []


def test_shutdown_drains_in_flight_streams_and_flushes_the_ledger(db):
    tenant_id, key = make_tenant(db[1])
    result: dict = {}
    server = serve(db, CannedBackend(tokens=20, delay_s=0.05))
    with server:
        def client():
            result["stream"] = stream(server, key, {**BODY, "max_tokens": 20})

        t = threading.Thread(target=client)
        t.start()
        while not server.server.server_state.tasks:  # the stream is being served
            time.sleep(0.01)
    t.join(30)
    status, evs = result["stream"]
    assert status == 200 and evs[-1] == "[DONE]"
    assert evs[-2]["usage"]["completion_tokens"] == 20
    (row,) = usage_rows(db[1], tenant_id)  # written before the process let go
    assert row.completion_tokens == 20 and row.status == "ok"


def test_request_ids(db):
    _, key = make_tenant(db[1])
    with serve(db, CannedBackend()) as server:
        h = {"Authorization": f"Bearer {key}", "x-request-id": "client-123"}
        a = httpx.post(f"{server.url}/v1/chat/completions", json=BODY, headers=h)
        b = httpx.post(f"{server.url}/v1/chat/completions", json=BODY, headers=h)
    assert a.headers["x-correlation-id"] == "client-123"
    assert a.headers["x-request-id"] != b.headers["x-request-id"]  # ours, never the client's
    assert a.json()["id"] != b.json()["id"]


class ExplodingBackend(CannedBackend):
    def count_prompt_tokens(self, version, *, prompt=None, messages=None):
        if messages and messages[0]["content"] == "boom":
            raise RuntimeError("a bug, not a client mistake")
        return super().count_prompt_tokens(version, prompt=prompt, messages=messages)


def test_unexpected_errors_are_500_in_openai_shape(db):
    tenant_id, key = make_tenant(db[1])
    with serve(db, ExplodingBackend()) as server:
        r = httpx.post(f"{server.url}/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                       json={**BODY, "messages": [{"role": "user", "content": "boom"}]})
        assert r.status_code == 500 and r.json()["error"]["type"] == "server_error"
        assert r.headers["x-request-id"].startswith("req_")
        ok = httpx.post(f"{server.url}/v1/chat/completions", json=BODY, headers={"Authorization": f"Bearer {key}"})
        assert ok.status_code == 200  # the process carries on
    assert len(usage_rows(db[1], tenant_id)) == 1
