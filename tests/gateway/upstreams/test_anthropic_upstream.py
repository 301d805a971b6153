"""An Anthropic-protocol upstream end to end: OpenAI chat requests through a live gateway to the fake Anthropic
Messages server, answers and streams translated back, its usage billed once, its errors mapped."""
from __future__ import annotations

import json
import os
import time

import httpx
import pytest

from gateway.catalogue import load_catalogue
from gateway.main import create_app
from gateway.settings import Settings
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import FP32, CannedBackend, LiveServer, make_tenant, migrate_and_seed, usage_rows
from tests.gateway.upstreams.conftest import write_catalogue
from tests.gateway.upstreams.fake_anthropic import (API_KEY, Answer, Cut, Fail, PingsOnly, Silent, StreamError,
                                                    text_message, tool_message, tool_use)

MSG = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi."}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


@pytest.fixture(scope="module")
def gw(tmp_path_factory, fake_anthropic_server):
    tmp = tmp_path_factory.mktemp("anthropic-upstream")
    extra = {"upstreams": {"claude": {"protocol": "anthropic", "base_url": fake_anthropic_server.url,
                                      "api_key_env": "TG_TEST_ANTHROPIC_KEY", "timeout_s": 10, "connect_timeout_s": 1,
                                      "first_token_timeout_s": 1, "idle_timeout_s": 1}},
             "models": {"claude-chat": {"price": {"input_per_million": 3, "output_per_million": 15},
                                        "versions": {"v1": {"upstream": "claude", "model": "claude-fake-1",
                                                            "cost": {"input_per_million": 3,
                                                                     "output_per_million": 15}}}}},
             "aliases": {"claude-or-local": {"weights": {"claude-chat@v1": 100}, "fallbacks": [FP32]}}}
    catalogue = write_catalogue(tmp, Settings().catalogue, extra)
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, load_catalogue(catalogue))
    os.environ["TG_TEST_ANTHROPIC_KEY"] = API_KEY
    settings = gateway_settings(tmp, url, catalogue=str(catalogue), embeddings_enabled=False, cache_enabled=False)
    with LiveServer(create_app(settings, backend=CannedBackend(versions=[FP32]))) as server:
        yield server, url
    del os.environ["TG_TEST_ANTHROPIC_KEY"]


@pytest.fixture
def fake(fake_anthropic):
    return fake_anthropic


def post(server, key, body):
    return httpx.post(f"{server.url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"},
                      timeout=30)


def stream(server, key, body) -> list:
    with httpx.stream("POST", f"{server.url}/v1/chat/completions", timeout=30,
                      json={**body, "stream": True, "stream_options": {"include_usage": True}},
                      headers={"Authorization": f"Bearer {key}"}) as r:
        assert r.status_code == 200
        raw = r.read().decode()
    return [d if d == "[DONE]" else json.loads(d) for d in
            (line.removeprefix("data: ") for line in raw.splitlines() if line.startswith("data: "))]


def test_a_chat_request_is_served_by_the_messages_api(gw, fake):
    server, url = gw
    tenant_id, key = make_tenant(url)
    fake.script(Answer(text_message("Hi there!", input_tokens=12, output_tokens=4, stop_reason="max_tokens")))
    r = post(server, key, {"model": "claude-chat", "messages": MSG, "max_tokens": 4, "stop": ["END"]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["model"] == "claude-chat@v1"
    assert body["choices"][0]["message"]["content"] == "Hi there!"
    assert body["choices"][0]["finish_reason"] == "length"  # max_tokens, not end_turn
    assert (body["usage"]["prompt_tokens"], body["usage"]["completion_tokens"]) == (12, 4)
    (sent,) = fake.requests
    assert sent.headers["x-api-key"] == API_KEY and sent.headers["anthropic-version"]
    assert sent.body["model"] == "claude-fake-1" and sent.body["system"] == "Be brief."
    assert sent.body["max_tokens"] == 4 and sent.body["stop_sequences"] == ["END"] and sent.body["stream"] is True
    (row,) = usage_rows(url, tenant_id)
    assert (row.prompt_tokens, row.completion_tokens, row.metered_by) == (12, 4, "upstream")


def test_a_streamed_answer_with_cumulative_usage_is_counted_once(gw, fake):
    server, url = gw
    tenant_id, key = make_tenant(url)
    fake.script(Answer(text_message("Hello from the fake Messages API.", input_tokens=30, output_tokens=8),
                       full_delta_usage=True))
    events = stream(server, key, {"model": "claude-chat", "messages": MSG})
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events[:-1] if e.get("choices"))
    assert text == "Hello from the fake Messages API." and events[-1] == "[DONE]"
    assert events[-2]["usage"]["prompt_tokens"] == 30 and events[-2]["usage"]["completion_tokens"] == 8
    (row,) = usage_rows(url, tenant_id)
    assert (row.prompt_tokens, row.completion_tokens) == (30, 8)


def test_tool_use_comes_back_as_tool_calls(gw, fake):
    server, url = gw
    _, key = make_tenant(url)
    fake.script(Answer(tool_message(tool_use("get_weather", {"city": "Paris"}, id="toolu_1"))))
    r = post(server, key, {"model": "claude-chat", "messages": MSG, "tools": TOOLS})
    choice = r.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["id"] == "toolu_1" and call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert fake.requests[0].body["tools"][0]["name"] == "get_weather"


def test_a_rate_limit_falls_back_or_is_a_429(gw, fake):
    server, url = gw
    tenant_id, key = make_tenant(url)
    fake.script(Fail.rate_limited(retry_after=7), Fail.rate_limited(retry_after=7))
    r = post(server, key, {"model": "claude-or-local", "messages": MSG, "max_tokens": 4})
    assert r.status_code == 200 and r.json()["model"] == FP32
    r = post(server, key, {"model": "claude-chat", "messages": MSG})
    assert r.status_code == 429 and r.headers["retry-after"] == "7"
    assert [row.version for row in usage_rows(url, tenant_id)] == [FP32]


def test_an_error_event_mid_stream_is_an_error_event_and_the_delivered_part_is_billed(gw, fake):
    server, url = gw
    tenant_id, key = make_tenant(url)
    fake.script(StreamError(text_message("Partial answer that breaks off.", output_tokens=7), after=5))
    events = stream(server, key, {"model": "claude-chat", "messages": MSG})
    assert events[-2]["error"]["code"] == "generation_failed" and events[-1] == "[DONE]"
    told = events[-3]["usage"]
    (row,) = usage_rows(url, tenant_id)
    assert row.status == "error" and row.completion_tokens == told["completion_tokens"] > 0
    assert row.prompt_tokens == told["prompt_tokens"]


def test_what_messages_cannot_express_is_a_400(gw, fake):
    server, url = gw
    _, key = make_tenant(url)
    r = post(server, key, {"model": "claude-chat", "messages": MSG, "n": 2})
    assert r.status_code == 400 and "n" in r.json()["error"]["message"]
    assert fake.requests == []


@pytest.mark.parametrize("reply", [Silent(), Silent(headers=True), PingsOnly(text_message("never"), interval_s=0.1)],
                         ids=["no-headers", "headers-only", "pings-only"])
def test_a_silent_upstream_trips_the_first_token_timeout_whatever_keeps_the_connection_busy(gw, fake, reply):
    server, url = gw
    tenant_id, key = make_tenant(url)
    fake.script(reply)
    started = time.monotonic()
    r = post(server, key, {"model": "claude-chat", "messages": MSG})
    took = time.monotonic() - started
    assert r.status_code == 504 and r.json()["error"]["code"] == "upstream_timeout"
    assert 0.9 <= took < 1.6  # first_token_timeout_s: 1, pings every 0.1 s notwithstanding
    assert usage_rows(url, tenant_id) == []


def test_a_connection_dropped_mid_answer_ends_with_an_error_event(gw, fake):
    server, url = gw
    tenant_id, key = make_tenant(url)
    fake.script(Cut(text_message("Partial answer that breaks off here.", output_tokens=9), after=5, abrupt=True))
    events = stream(server, key, {"model": "claude-chat", "messages": MSG})
    assert events[-2]["error"]["code"] == "generation_failed" and events[-1] == "[DONE]"
    (row,) = usage_rows(url, tenant_id)
    assert row.status == "error" and row.completion_tokens == events[-3]["usage"]["completion_tokens"] > 0
