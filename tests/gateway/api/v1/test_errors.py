"""Client mistakes: 4xx in OpenAI's shape, naming the param, and never a ledger row."""
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from openai import OpenAI

from gateway.crud.keys import create_key, get_key, revoke_key
from gateway.db.database import Database
from tests.gateway.support import make_tenant, usage_rows, wait_usage_rows

pytestmark = pytest.mark.model

MSG = [{"role": "user", "content": "hi"}]
OK = {"model": "smollm2-135m-instruct", "messages": MSG, "max_tokens": 2}


@pytest.fixture(scope="module")
def caller(real_gateway):
    server, settings = real_gateway
    tenant_id, key = make_tenant(settings.resolved_database_url)
    client = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
    return tenant_id, client


def _error(resp: httpx.Response, status: int) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()["error"]
    assert set(body) == {"message", "type", "param", "code"}
    return body


BAD_CHAT = [
    ({**OK, "messages": []}, "messages"),
    ({**OK, "messages": [{"role": "wizard", "content": "hi"}]}, "messages.0.role"),
    ({**OK, "messages": "hi"}, "messages"),
    ({**OK, "n": 17}, "n"),
    ({**OK, "top_logprobs": 3}, "top_logprobs"),
    ({**OK, "logprobs": True, "top_logprobs": 21}, "top_logprobs"),
    ({**OK, "presence_penalty": 2.5}, "presence_penalty"),
    ({**OK, "min_p": 1.5}, "min_p"),
    ({**OK, "top_k": -2}, "top_k"),
    ({**OK, "stop_token_ids": [-1]}, "stop_token_ids"),
    ({**OK, "ignore_eos": "yes"}, "ignore_eos"),
    ({**OK, "max_tokens": 0}, "max_tokens"),
    ({**OK, "max_tokens": "5"}, "max_tokens"),
    ({**OK, "max_completion_tokens": -1}, "max_completion_tokens"),
    ({**OK, "max_tokens": 10_000_000}, "max_tokens"),
    ({**OK, "temperature": 2.5}, "temperature"),
    ({**OK, "temperature": "hot"}, "temperature"),
    ({**OK, "top_p": 0}, "top_p"),
    ({**OK, "top_p": 1.5}, "top_p"),
    ({**OK, "stop": ["", "x"]}, "stop"),
    ({**OK, "tools": [{"type": "function", "function": {"name": "no spaces"}}]}, "tools.0.function.name"),
    ({**OK, "tools": [{"type": "function", "function": {"name": "f"}}] * 2}, "tools"),
    ({**OK, "tool_choice": "required"}, "tool_choice"),
    ({**OK, "tools": [{"type": "function", "function": {"name": "f"}}],
      "tool_choice": {"type": "function", "function": {"name": "g"}}}, "tool_choice"),
    ({**OK, "tool_choice": "sometimes"}, "tool_choice"),
    ({**OK, "messages": [{"role": "tool", "content": "42"}]}, "messages.0"),
    ({**OK, "response_format": {"type": "xml"}}, "response_format.type"),
    ({**OK, "response_format": {"type": "json_schema"}}, "response_format"),
    ({**OK, "structured_outputs": {"regex": "a+", "choice": ["a"]}}, "structured_outputs"),
    ({**OK, "structured_outputs": {"json": "{not json"}}, "structured_outputs"),
    ({**OK, "functions": [{"name": "f"}]}, "functions"),
    ({**OK, "stream": "yes"}, "stream"),
    ({"messages": MSG}, "model"),
]


@pytest.mark.parametrize("body,param", BAD_CHAT, ids=[p for _, p in BAD_CHAT])
def test_bad_chat_bodies_name_the_param(caller, body, param):
    _, client = caller
    err = _error(client.post("/v1/chat/completions", json=body), 400)
    assert err["type"] == "invalid_request_error" and err["param"] == param


def test_bad_completion_bodies(caller):
    _, client = caller
    base = {"model": "smollm2-135m-instruct", "prompt": "hi", "max_tokens": 2}
    assert _error(client.post("/v1/completions", json={**base, "prompt": ["a", "b"]}), 400)["param"] == "prompt"
    assert _error(client.post("/v1/completions", json={**base, "echo": True}), 400)["param"] == "echo"
    r = client.post("/v1/completions", json={**base, "best_of": 3, "stream": True})
    assert _error(r, 400)["param"] == "best_of"
    assert _error(client.post("/v1/completions", json={**base, "best_of": 1, "n": 2}), 400)["param"] == "best_of"
    assert _error(client.post("/v1/completions", json={**base, "logprobs": 21}), 400)["param"] == "logprobs"


def test_malformed_and_non_object_json(caller):
    _, client = caller
    headers = {"content-type": "application/json"}
    for raw in (b"{not json", b"", b"[1, 2]", b'"text"'):
        err = _error(client.post("/v1/chat/completions", content=raw, headers=headers), 400)
        assert err["type"] == "invalid_request_error"


def test_oversized_body_is_refused_before_parsing(caller, real_gateway):
    _, settings = real_gateway
    _, client = caller
    big = b"{" + b" " * (settings.max_body_bytes + 10) + b"}"
    err = _error(client.post("/v1/chat/completions", content=big, headers={"content-type": "application/json"}), 413)
    assert err["code"] == "request_too_large"

    def chunked():  # no Content-Length: counted as it arrives
        for _ in range(settings.max_body_bytes // 65536 + 2):
            yield b" " * 65536

    resp = client.post("/v1/chat/completions", content=chunked(), headers={"content-type": "application/json"})
    assert _error(resp, 413)["code"] == "request_too_large"


def test_unknown_model_is_404(caller):
    _, client = caller
    err = _error(client.post("/v1/chat/completions", json={**OK, "model": "gpt-17"}), 404)
    assert err["code"] == "model_not_found" and err["param"] == "model"
    err = _error(client.post("/v1/embeddings", json={"model": "nope", "input": "x"}), 404)
    assert err["code"] == "model_not_found"


def test_sdk_raises_bad_request(real_gateway):
    server, settings = real_gateway
    _, key = make_tenant(settings.resolved_database_url)
    client = OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)
    import openai

    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="smollm2-135m-instruct", messages=MSG, n=17)
    assert e.value.body["param"] == "n"


def test_mistakes_leave_no_ledger_row(caller, real_gateway):
    _, settings = real_gateway
    tenant_id, client = caller
    assert client.post("/v1/chat/completions", json=OK).status_code == 200
    rows = wait_usage_rows(settings.resolved_database_url, tenant_id, 1)
    # Everything above in this module was refused; only this request may be billed.
    assert len(rows) == 1 and rows[0].completion_tokens >= 1


# ---- authentication -------------------------------------------------------------------


def test_auth_failures_are_401(real_gateway):
    server, settings = real_gateway
    url = settings.resolved_database_url
    tenant_id, key = make_tenant(url)
    db = Database(url)
    with db.session() as s:
        _expired_row, expired = create_key(s, tenant_id=tenant_id, expires_at=datetime.now(UTC) - timedelta(seconds=1))
        revoked_row, revoked = create_key(s, tenant_id=tenant_id)
        revoke_key(s, key=get_key(s, key_id=revoked_row.id))
    db.dispose()
    cases = {"missing": {}, "not bearer": {"Authorization": f"Basic {key}"},
             "malformed": {"Authorization": "Bearer nonsense"},
             "unknown": {"Authorization": f"Bearer {key[:-4]}abcd"},
             "revoked": {"Authorization": f"Bearer {revoked}"}, "expired": {"Authorization": f"Bearer {expired}"}}
    for name, headers in cases.items():
        resp = httpx.post(f"{server.url}/v1/chat/completions", json=OK, headers=headers)
        assert _error(resp, 401)["code"] == "invalid_api_key", name
    assert usage_rows(url, tenant_id) == []


def test_key_limited_to_other_models_is_403(real_gateway):
    server, settings = real_gateway
    _, key = make_tenant(settings.resolved_database_url, models=["all-minilm-l6-v2"])
    h = {"Authorization": f"Bearer {key}"}
    err = _error(httpx.post(f"{server.url}/v1/chat/completions", json=OK, headers=h), 403)
    assert err["type"] == "permission_error"
    assert httpx.post(f"{server.url}/v1/embeddings", json={"model": "all-minilm-l6-v2", "input": "x"},
                      headers=h).status_code == 200


def test_tenant_key_cannot_reach_admin_routes(caller):
    _, client = caller
    assert _error(client.get("/admin/tenants"), 401)["code"] == "invalid_api_key"
    assert client.get("/admin/routes").status_code == 401


def test_error_bodies_are_json(caller):
    _, client = caller
    resp = client.post("/v1/chat/completions", json={**OK, "n": 5})
    json.loads(resp.text)
    assert resp.headers["x-request-id"].startswith("req_")
