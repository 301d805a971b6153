"""Completions, embeddings, models and the ops endpoints against the real app."""
from __future__ import annotations

import threading

import httpx
import pytest
from openai import OpenAI

from tests.gateway.support import FP32, METRICS, make_tenant, wait_usage_rows

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def tenant(real_gateway):
    server, settings = real_gateway
    tenant_id, key = make_tenant(settings.resolved_database_url)
    return tenant_id, OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)


def test_completion_plain_and_streamed(tenant, real_gateway):
    _tenant_id, client = tenant
    resp = client.completions.create(model="smollm2-135m-instruct", prompt="The sky is", max_tokens=4,
                                     temperature=0)
    assert resp.object == "text_completion" and resp.model == FP32
    assert 1 <= resp.usage.completion_tokens <= 4
    chunks = list(client.completions.create(model="smollm2-135m-instruct", prompt="The sky is", max_tokens=4,
                                            temperature=0, stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == resp.choices[0].text
    assert chunks[-1].usage.completion_tokens == resp.usage.completion_tokens


def test_embeddings_are_billed_by_input_tokens(tenant, real_gateway):
    tenant_id, client = tenant
    _, settings = real_gateway
    before = len(wait_usage_rows(settings.resolved_database_url, tenant_id, 0, timeout_s=0))
    resp = client.embeddings.create(model="all-minilm-l6-v2", input=["hello world", "tollgate"])
    assert len(resp.data) == 2 and len(resp.data[0].embedding) == 384
    assert resp.usage.prompt_tokens > 0
    floats = client.embeddings.create(model="all-minilm-l6-v2", input="hello world", encoding_format="float")
    assert floats.data[0].embedding == pytest.approx(resp.data[0].embedding, abs=1e-6)
    rows = wait_usage_rows(settings.resolved_database_url, tenant_id, before + 2)
    emb = [r for r in rows if r.endpoint == "/v1/embeddings"]
    assert emb[0].prompt_tokens == resp.usage.prompt_tokens and emb[0].completion_tokens == 0


def test_models_lists_what_the_key_may_call(real_gateway):
    server, settings = real_gateway
    _, key = make_tenant(settings.resolved_database_url)
    ids = {m.id for m in OpenAI(base_url=f"{server.url}/v1", api_key=key).models.list()}
    assert {"chat", "smollm2-135m-instruct", "all-minilm-l6-v2"} <= ids
    _, limited = make_tenant(settings.resolved_database_url, models=["chat"])
    ids = {m.id for m in OpenAI(base_url=f"{server.url}/v1", api_key=limited).models.list()}
    assert ids == {"chat"}


def test_ops_endpoints(real_gateway):
    server, _ = real_gateway
    assert httpx.get(f"{server.url}/healthz").json() == {"status": "ok"}
    ready = httpx.get(f"{server.url}/readyz")
    assert ready.status_code == 200 and ready.json()["versions"] == {FP32: True}
    assert ready.json()["status"] == "ready" and ready.json()["checks"]["database"] is True
    assert ready.json()["checks"]["warm"] is True
    assert httpx.get(f"{server.url}/health").status_code == 200  # what load tools (guidellm) probe
    assert httpx.get(f"{server.url}/metrics").status_code == 401
    metrics = httpx.get(f"{server.url}/metrics", headers=METRICS).text
    assert "tollgate_requests_total" in metrics and "tollgate_time_to_first_token_seconds" in metrics


def test_not_ready_while_the_cache_verifier_warms(real_gateway, monkeypatch):
    """The verifier's warm-up (most of a core for ~15-20 s) runs while the pool starts; traffic waits for it, so a
    small pool's first requests never share the cores with it."""
    server, _ = real_gateway
    cache = server.server.config.app.state.services.cache
    release = threading.Event()
    monkeypatch.setattr(cache, "warm", lambda: release.wait(30))
    warming = cache.start_warming()
    try:
        ready = httpx.get(f"{server.url}/readyz")
        assert ready.status_code == 503 and ready.json()["checks"]["warm"] is False
        assert httpx.get(f"{server.url}/health").status_code == 503
    finally:
        release.set()
        warming.join(10)
    assert httpx.get(f"{server.url}/readyz").json()["checks"]["warm"] is True
