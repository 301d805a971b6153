"""POST /v1/messages and /v1/messages/count_tokens through the official `anthropic` SDK, over a scripted backend
(its answer chosen per request, one character a token, stop strings honoured as the engine does): whole and
streamed answers, the exact event sequence, system prompts, stop sequences, tool use both ways, errors in
Anthropic's shape (400, 401, 404, 429), count_tokens, bills equal to what the client was told, and a
semantic-cache hit replayed as a Message."""
from __future__ import annotations

import json
import time

import anthropic
import httpx
import pytest

from gateway.main import create_app
from gateway.serving.base import GenerationChunk, GenerationRequest
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import (ADMIN_KEY, FP32, CannedBackend, LiveServer, make_tenant, migrate_and_seed,
                                   wait_usage_rows)

MODEL = "smollm2-135m-instruct"
HI = [{"role": "user", "content": "Say hi."}]
WEATHER = {"name": "get_weather", "description": "The weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
CALL = '<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_call>'


class ScriptedBackend(CannedBackend):
    """Answers with the text `script` picks for the request, one character a token (id = code point). A stop
    string ends the answer as the engine's does: left out of the text, its tokens still generated."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.requests: list[GenerationRequest] = []

    @staticmethod
    def script(request: GenerationRequest) -> str:
        last = request.messages[-1]["content"]
        if "<tools>" in request.messages[0]["content"] and "<tool_response>" not in last:
            return "Let me look. " + CALL
        if "<tool_response>" in last:
            return "It is sunny in Paris."
        if "contact" in last:
            return "Write to john.doe@example.com today."
        if "count to five" in last:
            return "one two three STOP four five"
        return "Hello there!"

    @staticmethod
    def _count(prompt: str | None, messages: list[dict] | None) -> int:
        return sum(len(m["content"].split()) for m in messages or [{"content": prompt or ""}])

    async def stream(self, request: GenerationRequest):
        self.requests.append(request)
        self.served.append(request.version)
        text = self.script(request)
        matches = sorted((text.index(s), s) for s in request.stop if s in text)
        cut, tokens, finish = len(text), len(text), "stop"
        if matches:
            cut, tokens = matches[0][0], matches[0][0] + len(matches[0][1])
        if tokens > request.max_tokens:
            tokens, cut, finish = request.max_tokens, min(cut, request.max_tokens), "length"
        prompt = self._count(request.prompt, request.messages)
        for i in range(tokens):
            yield GenerationChunk(text=text[i] if i < cut else "", token_ids=[ord(text[i])], prompt_tokens=prompt,
                                  completion_tokens=i + 1, cached_tokens=1,
                                  finish_reason=finish if i == tokens - 1 else None, engine_ms=1.0)


@pytest.fixture(scope="module")
def db(tmp_path_factory, gw_catalogue):
    tmp = tmp_path_factory.mktemp("messages")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    return tmp, url


@pytest.fixture(scope="module")
def backend():
    return ScriptedBackend()


@pytest.fixture(scope="module")
def live(db, backend, embedder):
    tmp, url = db
    with LiveServer(create_app(gateway_settings(tmp, url), backend=backend, embedder=embedder)) as server:
        yield server


@pytest.fixture
def tenant(db):
    return make_tenant(db[1])


def client(live: LiveServer, key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=live.url, api_key=key, max_retries=0)


def events(live: LiveServer, key: str, **body) -> list[tuple[str, dict]]:
    with httpx.stream("POST", f"{live.url}/v1/messages", json={"model": MODEL, "max_tokens": 64, **body,
                                                                 "stream": True},
                      headers={"x-api-key": key, "anthropic-version": "2023-06-01"}, timeout=30) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        raw = r.read().decode()
    out = []
    for block in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        data = json.loads(lines["data"])
        assert lines["event"] == data["type"]
        out.append((lines["event"], data))
    return out


def test_a_plain_message(live, tenant, db):
    tenant_id, key = tenant
    message = client(live, key).messages.create(model=MODEL, max_tokens=64, messages=HI)
    assert message.id.startswith("msg_") and message.type == "message" and message.role == "assistant"
    assert message._request_id.startswith("req_")  # the SDK reads Anthropic's request-id header
    assert message.model == FP32  # the version that answered, as chat responses name it
    assert [b.type for b in message.content] == ["text"] and message.content[0].text == "Hello there!"
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    assert (message.usage.input_tokens, message.usage.cache_read_input_tokens) == (1, 1)  # one from the prefix cache
    assert message.usage.output_tokens == 12
    (row,) = wait_usage_rows(db[1], tenant_id, 1)
    assert row.endpoint == "/v1/messages" and row.status == "ok"
    assert row.prompt_tokens == message.usage.input_tokens + message.usage.cache_read_input_tokens
    assert (row.completion_tokens, row.cached_tokens) == (message.usage.output_tokens, 1)


def test_bearer_auth_and_the_version_headers(live, tenant):
    r = httpx.post(f"{live.url}/v1/messages", json={"model": MODEL, "max_tokens": 5, "messages": HI}, timeout=30,
                   headers={"Authorization": f"Bearer {tenant[1]}", "anthropic-version": "2023-06-01",
                            "anthropic-beta": "tools-2024-04-04"})
    assert r.status_code == 200 and r.json()["stop_reason"] == "max_tokens"
    assert r.json()["content"] == [{"type": "text", "text": "Hello"}]


def test_the_system_prompt_and_sampling_reach_the_engine(live, backend, tenant):
    client(live, tenant[1]).messages.create(
        model=MODEL, max_tokens=64, messages=HI, extra_body={"temperature": 0.5, "top_p": 0.9, "top_k": 20},
        system=[{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Be kind."}],
        metadata={"user_id": "u-1"})
    request = backend.requests[-1]
    assert request.messages == [{"role": "system", "content": "Be brief.\n\nBe kind."},
                                {"role": "user", "content": "Say hi."}]
    assert (request.temperature, request.top_p, request.top_k, request.max_tokens) == (0.5, 0.9, 20, 64)


def test_the_event_sequence(live, tenant, db):
    tenant_id, key = tenant
    got = events(live, key, messages=HI)
    names = [name for name, _ in got]
    assert names == (["message_start", "content_block_start", "ping"] + ["content_block_delta"] * 12
                     + ["content_block_stop", "message_delta", "message_stop"])
    start = got[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None and start["usage"]["output_tokens"] == 0
    assert (start["usage"]["input_tokens"], start["usage"]["cache_read_input_tokens"]) == (1, 1)
    assert got[1][1] == {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    assert "".join(d["delta"]["text"] for n, d in got if n == "content_block_delta") == "Hello there!"
    delta = got[-2][1]
    assert delta["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    assert delta["usage"]["output_tokens"] == 12
    (row,) = wait_usage_rows(db[1], tenant_id, 1)
    assert (row.completion_tokens, row.prompt_tokens, row.cached_tokens) == (12, 2, 1)


def test_the_sdk_stream_helper(live, tenant):
    sdk = client(live, tenant[1])
    with sdk.messages.stream(model=MODEL, max_tokens=64, messages=HI) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    whole = sdk.messages.create(model=MODEL, max_tokens=64, messages=HI)
    assert text == final.content[0].text == "Hello there!"
    assert [b.model_dump(include={"type", "text"}) for b in final.content] == [{"type": "text", "text": text}]
    assert whole.content[0].text == text and final.stop_reason == whole.stop_reason == "end_turn"
    assert final.usage.output_tokens == whole.usage.output_tokens == 12
    assert final.usage.input_tokens == whole.usage.input_tokens


def test_stop_sequences(live, tenant):
    sdk = client(live, tenant[1])
    ask = [{"role": "user", "content": "count to five"}]
    message = sdk.messages.create(model=MODEL, max_tokens=64, messages=ask, stop_sequences=["nope", "STOP"])
    assert message.content[0].text == "one two three "
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "STOP")
    assert message.usage.output_tokens == len("one two three STOP")
    with sdk.messages.stream(model=MODEL, max_tokens=64, messages=ask, stop_sequences=["STOP"]) as stream:
        final = stream.get_final_message()
    assert (final.stop_reason, final.stop_sequence, final.content[0].text) == ("stop_sequence", "STOP",
                                                                               "one two three ")
    unmatched = sdk.messages.create(model=MODEL, max_tokens=64, messages=HI, stop_sequences=["STOP"])
    assert (unmatched.stop_reason, unmatched.stop_sequence) == ("end_turn", None)


def test_a_tool_use_round_trip(live, backend, tenant):
    sdk = client(live, tenant[1])
    ask = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = sdk.messages.create(model=MODEL, max_tokens=200, messages=ask, tools=[WEATHER])
    assert first.stop_reason == "tool_use"
    text, call = first.content
    assert text.type == "text" and text.text == "Let me look."
    assert call.type == "tool_use" and call.id.startswith("toolu_")
    assert (call.name, call.input) == ("get_weather", {"city": "Paris"})
    assert "<tools>" in backend.requests[-1].messages[0]["content"]  # the tools reached the model

    history = [*ask, {"role": "assistant", "content": [b.model_dump() for b in first.content]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                             "content": "sunny, 24C"}]}]
    second = sdk.messages.create(model=MODEL, max_tokens=200, messages=history, tools=[WEATHER])
    assert second.stop_reason == "end_turn" and second.content[0].text == "It is sunny in Paris."
    seen = backend.requests[-1].messages
    assert seen[-2]["role"] == "assistant" and '"city": "Paris"' in seen[-2]["content"]
    assert seen[-1] == {"role": "user", "content": "<tool_response>\nsunny, 24C\n</tool_response>"}


def test_a_streamed_tool_call(live, tenant):
    sdk = client(live, tenant[1])
    ask = [{"role": "user", "content": "What is the weather in Paris?"}]
    got = events(live, tenant[1], messages=ask, tools=[WEATHER], tool_choice={"type": "any"}, max_tokens=200)
    names = [n for n, _ in got]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    starts = [d for n, d in got if n == "content_block_start"]
    assert [s["content_block"]["type"] for s in starts] == ["text", "tool_use"] and starts[1]["index"] == 1
    partial = [d["delta"] for n, d in got if n == "content_block_delta" and d["index"] == 1]
    assert partial == [{"type": "input_json_delta", "partial_json": '{"city": "Paris"}'}]
    assert names.count("content_block_stop") == 2 and names[-2:] == ["message_delta", "message_stop"]
    assert got[-2][1]["delta"]["stop_reason"] == "tool_use"
    with sdk.messages.stream(model=MODEL, max_tokens=200, messages=ask, tools=[WEATHER]) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use" and final.content[1].input == {"city": "Paris"}


def test_max_tokens_zero_is_a_400_in_anthropic_shape(live, tenant):
    with pytest.raises(anthropic.BadRequestError) as e:
        client(live, tenant[1]).messages.create(model=MODEL, max_tokens=0, messages=HI)
    assert e.value.status_code == 400
    assert e.value.body["type"] == "error" and e.value.body["error"]["type"] == "invalid_request_error"
    assert "max_tokens" in e.value.body["error"]["message"]
    r = httpx.post(f"{live.url}/v1/messages", json={"model": MODEL, "messages": HI}, timeout=30,
                   headers={"x-api-key": tenant[1]})
    assert r.status_code == 400 and r.json()["error"]["message"].startswith("max_tokens")


def test_a_wrong_key_is_a_401_in_anthropic_shape(live):
    with pytest.raises(anthropic.AuthenticationError) as e:
        client(live, "tg-not-a-key").messages.create(model=MODEL, max_tokens=5, messages=HI)
    assert e.value.status_code == 401
    assert set(e.value.body) == {"type", "error"} and e.value.body["error"]["type"] == "authentication_error"
    r = httpx.post(f"{live.url}/v1/messages", json={"model": MODEL, "max_tokens": 5, "messages": HI}, timeout=30)
    assert r.status_code == 401 and "x-api-key" in r.json()["error"]["message"]


@pytest.mark.parametrize("body, param", [
    ({"messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": "AA==",
                                                                          "media_type": "image/png"}}]}]},
     "messages.0.content.0"),
    ({"messages": HI, "stop_sequences": ["a", "b", "c", "d", "e"]}, "stop_sequences"),
    ({"messages": HI, "tool_choice": {"type": "tool", "name": "nope"}, "tools": [WEATHER]}, "tool_choice"),
    ({"messages": HI, "temperature": 1.5}, "temperature"),
    ({"messages": []}, "messages"),
    ({"messages": HI, "tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "tools"),
])
def test_bad_requests_are_400s_naming_the_field(live, tenant, body, param):
    r = httpx.post(f"{live.url}/v1/messages", json={"model": MODEL, "max_tokens": 5, **body}, timeout=30,
                   headers={"x-api-key": tenant[1]})
    assert r.status_code == 400, r.text
    assert r.json()["type"] == "error" and r.json()["error"]["type"] == "invalid_request_error"
    assert r.json()["error"]["message"].startswith(param), r.json()


def test_an_unknown_model_is_a_404_and_a_rate_limit_a_429(live, db):
    _, key = make_tenant(db[1], rpm=1)
    with pytest.raises(anthropic.NotFoundError) as e:
        client(live, key).messages.create(model="no-such-model", max_tokens=5, messages=HI)
    assert e.value.body["error"]["type"] == "not_found_error"
    client(live, key).messages.create(model=MODEL, max_tokens=5, messages=HI)
    with pytest.raises(anthropic.RateLimitError) as e:
        client(live, key).messages.create(model=MODEL, max_tokens=5, messages=HI)
    assert e.value.body["error"]["type"] == "rate_limit_error" and int(e.value.response.headers["retry-after"]) >= 1


def test_count_tokens(live, backend, tenant):
    sdk = client(live, tenant[1])
    count = sdk.messages.count_tokens(model=MODEL, messages=HI, system="Be brief.")
    assert count.input_tokens == 4  # the system prompt's words and the message's
    message = sdk.messages.create(model=MODEL, max_tokens=5, messages=HI, system="Be brief.")
    assert message.usage.input_tokens + message.usage.cache_read_input_tokens == count.input_tokens
    with_tools = sdk.messages.count_tokens(model=MODEL, messages=HI, tools=[WEATHER])
    assert with_tools.input_tokens > 2  # the tools' declarations are part of the prompt
    with pytest.raises(anthropic.AuthenticationError):
        client(live, "tg-not-a-key").messages.count_tokens(model=MODEL, messages=HI)


def test_a_semantic_cache_hit_replayed_as_a_message(live, backend, db):
    tenant_id, key = make_tenant(db[1])
    sdk = client(live, key)
    ask = {"model": MODEL, "max_tokens": 64, "extra_body": {"temperature": 0},
           "messages": [{"role": "user", "content": "Say hi to the cache."}]}
    first = sdk.messages.create(**ask)
    deadline = time.monotonic() + 15
    while httpx.get(f"{live.url}/admin/tenants/{tenant_id}/cache/stats", headers=ADMIN).json()["entries"] < 1:
        assert time.monotonic() < deadline, "the answer was never stored"  # off the response path
        time.sleep(0.05)
    calls = len(backend.requests)
    raw = sdk.messages.with_raw_response.create(**ask)
    assert raw.headers["x-tollgate-cache"] == "hit" and len(backend.requests) == calls
    hit = raw.parse()
    assert hit.content == first.content and hit.stop_reason == "end_turn" and hit.id.startswith("msg_")
    assert hit.model == MODEL  # a hit names the model, as chat's do
    assert (hit.usage.input_tokens, hit.usage.cache_read_input_tokens) == (0, 5)  # priced as cached
    with sdk.messages.stream(**ask) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert len(backend.requests) == calls and text == "Hello there!" and final.usage == hit.usage

    rows = wait_usage_rows(db[1], tenant_id, 3)
    assert [r.cache_hit for r in rows] == [False, True, True]
    for row, told in zip(rows, (first.usage, hit.usage, final.usage)):  # billed what the client was told
        assert row.prompt_tokens == told.input_tokens + told.cache_read_input_tokens
        assert (row.completion_tokens, row.cached_tokens) == (told.output_tokens, told.cache_read_input_tokens)


def test_a_failure_mid_stream_is_an_error_event_billed_for_what_was_sent(db, tenant):
    tenant_id, key = tenant
    tmp, url = db
    app = create_app(gateway_settings(tmp, url, cache_enabled=False), backend=CannedBackend(fail_after=2))
    with LiveServer(app) as server:
        got = events(server, key, messages=HI)
        with (pytest.raises(anthropic.APIStatusError) as e,
              client(server, key).messages.stream(model=MODEL, max_tokens=64, messages=HI) as stream):
            "".join(stream.text_stream)
    names = [n for n, _ in got]
    assert names == ["message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta",
                     "error"]  # never a clean message_stop
    assert got[-1][1]["error"]["type"] == "api_error"
    assert e.value.body["error"]["type"] == "api_error"
    rows = wait_usage_rows(url, tenant_id, 2)
    assert [(r.status, r.completion_tokens) for r in rows] == [("error", 2), ("error", 2)]


def test_a_budget_that_runs_out_mid_stream(db, live):
    tenant_id, key = make_tenant(db[1], monthly_token_budget=7)  # 2 prompt tokens + 5 of the 12 answered
    got = events(live, key, messages=HI)
    assert [n for n, _ in got][-2:] == ["content_block_delta", "error"]
    assert got[-1][1]["error"]["type"] == "rate_limit_error"
    assert "".join(d["delta"]["text"] for n, d in got if n == "content_block_delta") == "Hello"
    (row,) = wait_usage_rows(db[1], tenant_id, 1)
    assert row.status == "truncated" and row.prompt_tokens + row.completion_tokens == 7


def test_a_client_that_leaves_aborts_the_generation_and_pays_for_what_was_made(db, tenant):
    tenant_id, key = tenant
    tmp, url = db
    backend = CannedBackend(tokens=200, delay_s=0.01)
    with LiveServer(create_app(gateway_settings(tmp, url, cache_enabled=False), backend=backend)) as server:
        with httpx.stream("POST", f"{server.url}/v1/messages", headers={"x-api-key": key}, timeout=30,
                          json={"model": MODEL, "max_tokens": 500, "messages": HI, "stream": True}) as r:
            rid, seen = r.headers["x-request-id"], 0
            for line in r.iter_lines():
                seen += line == "event: content_block_delta"
                if seen >= 8:
                    break
        (row,) = wait_usage_rows(url, tenant_id, 1)  # the server learns of it a moment later
    assert rid in backend.aborted
    assert row.status == "aborted" and 8 <= row.completion_tokens < 200


def test_guardrails_apply_in_and_out(live, db):
    tenant_id, key = make_tenant(db[1])
    rules = [{"name": "emails-out", "stage": "output", "kind": "pii", "mode": "redact", "entities": ["email"]},
             {"name": "no-passwords", "stage": "input", "kind": "deny_pattern", "mode": "block",
              "pattern": "(?i)password"}]
    r = httpx.put(f"{live.url}/admin/tenants/{tenant_id}/guardrails", headers=ADMIN, json=rules, timeout=30)
    assert r.status_code == 200, r.text
    sdk = client(live, key)
    ask = [{"role": "user", "content": "Whom do I contact?"}]
    assert sdk.messages.create(model=MODEL, max_tokens=64, messages=ask).content[0].text == "Write to [EMAIL] today."
    got = events(live, key, messages=ask)
    assert "john" not in json.dumps(got)
    assert "".join(d["delta"]["text"] for n, d in got if n == "content_block_delta") == "Write to [EMAIL] today."
    with pytest.raises(anthropic.BadRequestError) as e:
        sdk.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "my password is x"}])
    assert "no-passwords" in e.value.body["error"]["message"]
    assert e.value.response.headers["x-tollgate-guardrails"] == "no-passwords:block:1"
    assert len(wait_usage_rows(db[1], tenant_id, 2)) == 2  # the refusal is not billed
