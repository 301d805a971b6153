"""A real OpenAI-protocol server behind an upstream version: another Tollgate gateway serving SmolLM2 in process
(the session's real_gateway). Greedy answers through the front gateway equal the upstream's own, usage equal,
streamed usage present, tools passed through natively (the upstream's own tool path answers them)."""
from __future__ import annotations

import json
import os

import httpx
import pytest

from gateway.catalogue import load_catalogue
from gateway.main import create_app
from gateway.settings import Settings
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import FP32, CannedBackend, LiveServer, make_tenant, migrate_and_seed, usage_rows
from tests.gateway.upstreams.conftest import write_catalogue

MSG = [{"role": "user", "content": "Name three colours."}]


@pytest.fixture(scope="module")
def front(tmp_path_factory, real_gateway):
    upstream, upstream_settings = real_gateway
    _, upstream_key = make_tenant(upstream_settings.resolved_database_url)
    tmp = tmp_path_factory.mktemp("front")
    extra = {"upstreams": {"tollgate": {"protocol": "openai", "base_url": f"{upstream.url}/v1",
                                        "api_key_env": "TG_TEST_TOLLGATE_KEY", "timeout_s": 60}},
             "models": {"remote-smollm2": {"price": {"input_per_million": 1, "output_per_million": 2},
                                           "versions": {"v1": {"upstream": "tollgate", "model": FP32,
                                                               "max_model_len": 2048,
                                                               "tokenizer": "smollm2-135m-instruct"}}}}}
    catalogue = write_catalogue(tmp, Settings().catalogue, extra)
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, load_catalogue(catalogue))
    os.environ["TG_TEST_TOLLGATE_KEY"] = upstream_key
    settings = gateway_settings(tmp, url, catalogue=str(catalogue), embeddings_enabled=False, cache_enabled=False)
    with LiveServer(create_app(settings, backend=CannedBackend(versions=[FP32]))) as server:
        yield server, url, upstream, upstream_key
    del os.environ["TG_TEST_TOLLGATE_KEY"]


def post(url, key, body):
    return httpx.post(f"{url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60)


def test_greedy_answers_and_usage_equal_the_upstreams_own(front):
    server, url, upstream, upstream_key = front
    tenant_id, key = make_tenant(url)
    body = {"messages": MSG, "max_tokens": 12, "temperature": 0}
    direct = post(upstream.url, upstream_key, {**body, "model": FP32}).json()
    through = post(server.url, key, {**body, "model": "remote-smollm2"}).json()
    assert through["model"] == "remote-smollm2@v1"
    assert through["choices"][0]["message"]["content"] == direct["choices"][0]["message"]["content"]
    assert through["usage"]["prompt_tokens"] == direct["usage"]["prompt_tokens"]
    assert through["usage"]["completion_tokens"] == direct["usage"]["completion_tokens"]

    with httpx.stream("POST", f"{server.url}/v1/chat/completions", timeout=60,
                      headers={"Authorization": f"Bearer {key}"},
                      json={**body, "model": "remote-smollm2", "stream": True,
                            "stream_options": {"include_usage": True}}) as r:
        events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: {")]
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
    assert text == direct["choices"][0]["message"]["content"]
    assert events[-1]["usage"]["completion_tokens"] == direct["usage"]["completion_tokens"]
    rows = usage_rows(url, tenant_id)
    assert [(r.prompt_tokens, r.completion_tokens, r.metered_by) for r in rows] == \
        [(direct["usage"]["prompt_tokens"], direct["usage"]["completion_tokens"], "upstream")] * 2


def test_the_tokenizer_estimate_is_the_upstreams_count(front):
    """The version names the upstream model's tokenizer: admission's estimate is its exact prompt count."""
    _server, _url, upstream, upstream_key = front
    from gateway.upstreams.tokens import counter_for

    direct = post(upstream.url, upstream_key, {"model": FP32, "messages": MSG, "max_tokens": 1}).json()
    assert counter_for("smollm2-135m-instruct").count_prompt(messages=MSG) == direct["usage"]["prompt_tokens"]
