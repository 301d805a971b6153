"""Upstream versions end to end: a live gateway whose catalogue puts a real OpenAI-protocol server process
(fake_openai) behind versions, beside the local pool (a canned backend): plain and streamed answers with the
upstream's usage billed, tools passed through natively, upstream errors, timeouts, a cut stream, a dead or killed
upstream with and without a local fallback, and a provider key that never leaks."""
from __future__ import annotations

import json
import logging
import os
import threading
import time

import httpx
import pytest

from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import (ADMIN_KEY, FP32, CannedBackend, LiveServer, free_port, make_tenant, migrate_and_seed,
                                   usage_rows)
from tests.gateway.upstreams.conftest import (UPSTREAM_KEY, WRONG_KEY, Captured, UpstreamProcess,
                                              write_catalogue)

MSG = [{"role": "user", "content": "Say hi to me."}]  # the fake counts 4 words + 3 = 7 prompt tokens
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}}]
PRICE = {"input_per_million": 1.0, "output_per_million": 2.0}
COST = {"input_per_million": 0.5, "output_per_million": 1.0}
BEHAVIOURS = {"plain": "echo", "nousage": "nousage", "tools": "tools", "slowfirst": "slow-first", "silent": "silent",
              "idle": "idle", "cut": "cut", "e429": "error-429", "e500": "error-500", "e400": "error-400"}



@pytest.fixture(scope="module")
def killable():
    proc = UpstreamProcess("tests.gateway.upstreams.fake_openai", UPSTREAM_KEY)
    yield proc
    proc.kill()


@pytest.fixture(scope="module")
def gw(tmp_path_factory, fake_openai, killable):
    tmp = tmp_path_factory.mktemp("upstreams")
    versions = {name: {"upstream": "fake", "model": model, "cost": COST} for name, model in BEHAVIOURS.items()}
    versions["badkey"] = {"upstream": "wrongkey", "model": "echo"}
    fast = {"timeout_s": 10, "connect_timeout_s": 1, "first_token_timeout_s": 1.0, "idle_timeout_s": 1.0}
    extra = {
        "upstreams": {
            "fake": {"protocol": "openai", "base_url": f"{fake_openai.url}/v1", "api_key_env": "TG_TEST_FAKE_KEY",
                     **fast},
            "wrongkey": {"protocol": "openai", "base_url": f"{fake_openai.url}/v1",
                         "api_key_env": "TG_TEST_WRONG_KEY", **fast},
            "dead": {"protocol": "openai", "base_url": f"http://127.0.0.1:{free_port()}/v1", **fast},
            "killable": {"protocol": "openai", "base_url": f"{killable.url}/v1", "api_key_env": "TG_TEST_FAKE_KEY",
                         **fast},
            "narrow": {"protocol": "openai", "base_url": f"{fake_openai.url}/v1", "api_key_env": "TG_TEST_FAKE_KEY",
                       "max_concurrency": 1, **fast},
        },
        "models": {
            "api-chat": {"price": PRICE, "versions": versions},
            "api-dead": {"price": PRICE, "versions": {"v1": {"upstream": "dead", "model": "echo", "cost": COST}}},
            "api-killable": {"price": PRICE, "versions": {"v1": {"upstream": "killable", "model": "echo"}}},
            "api-narrow": {"price": PRICE, "versions": {"v1": {"upstream": "narrow", "model": "slow"}}},
        },
        "embeddings": {
            "api-embed": {"price": {"input_per_million": 0.1}, "upstream": "fake", "model": "fake-embed",
                          "cost": {"input_per_million": 0.05}},
            "api-embed-broken": {"price": {"input_per_million": 0.1}, "upstream": "fake", "model": "error-500"},
        },
        "aliases": {
            "burst": {"weights": {"api-dead@v1": 100}, "fallbacks": [FP32]},
            "burst-killable": {"weights": {"api-killable@v1": 100}, "fallbacks": [FP32]},
            "narrow-or-local": {"weights": {"api-narrow@v1": 100}, "fallbacks": [FP32]},
        },
    }
    from gateway.settings import Settings

    catalogue = write_catalogue(tmp, Settings().catalogue, extra)
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    from gateway.catalogue import load_catalogue

    migrate_and_seed(url, load_catalogue(catalogue))
    os.environ["TG_TEST_FAKE_KEY"], os.environ["TG_TEST_WRONG_KEY"] = UPSTREAM_KEY, WRONG_KEY
    captured = Captured()
    settings = gateway_settings(tmp, url, catalogue=str(catalogue), embeddings_enabled=False, cache_enabled=False)
    app = create_app(settings, backend=CannedBackend(versions=[FP32]))
    with LiveServer(app) as server:
        ours = logging.getLogger("tollgate")
        level, _ = ours.level, ours.setLevel(logging.DEBUG)  # every line the request path writes
        for name in ("tollgate", "gateway", ""):
            logging.getLogger(name).addHandler(captured)
        try:
            yield server, url, captured
        finally:
            for name in ("tollgate", "gateway", ""):
                logging.getLogger(name).removeHandler(captured)
            ours.setLevel(level)
    del os.environ["TG_TEST_FAKE_KEY"], os.environ["TG_TEST_WRONG_KEY"]


def post(server, key, body, path="/v1/chat/completions"):
    return httpx.post(f"{server.url}{path}", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def stream(server, key, body, path="/v1/chat/completions") -> tuple[int, list, dict]:
    events = []
    with httpx.stream("POST", f"{server.url}{path}", timeout=30, headers={"Authorization": f"Bearer {key}"},
                      json={**body, "stream": True, "stream_options": {"include_usage": True}}) as r:
        raw = r.read().decode()
        headers = dict(r.headers)
    for line in raw.splitlines():
        if line.startswith("data: "):
            data = line.removeprefix("data: ")
            events.append(data if data == "[DONE]" else json.loads(data))
    return r.status_code, events, headers


def text_of(events) -> str:
    return "".join(e["choices"][0]["delta"].get("content") or "" for e in events
                   if isinstance(e, dict) and e.get("choices"))


def test_plain_chat_is_the_upstreams_answer_named_as_the_catalogue_version(gw, fake_openai):
    server, url, _ = gw
    tenant_id, key = make_tenant(url)
    r = post(server, key, {"model": "api-chat@plain", "messages": MSG, "max_tokens": 4, "seed": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["model"] == "api-chat@plain" and r.headers["x-tollgate-model"] == "api-chat@plain"
    assert body["choices"][0]["message"]["content"] == "tok0 tok1 tok2 tok3 "
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["prompt_tokens"] == 7 and body["usage"]["completion_tokens"] == 4
    sent = fake_openai.seen()[-1]
    assert sent["model"] == "echo" and sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["seed"] == 3 and sent["max_tokens"] == 4 and sent["messages"] == MSG
    (row,) = usage_rows(url, tenant_id)
    assert (row.model, row.version, row.status) == ("api-chat", "api-chat@plain", "ok")
    assert (row.prompt_tokens, row.completion_tokens, row.metered_by) == (7, 4, "upstream")
    assert float(row.cost) == pytest.approx((7 * 1.0 + 4 * 2.0) / 1e6)


def test_streamed_chat_reports_and_bills_the_upstreams_usage(gw):
    server, url, _ = gw
    tenant_id, key = make_tenant(url)
    status, events, _headers = stream(server, key, {"model": "api-chat@plain", "messages": MSG, "max_tokens": 5})
    assert status == 200 and events[-1] == "[DONE]"
    assert events[0]["choices"][0]["delta"]["role"] == "assistant"
    assert text_of(events) == "tok0 tok1 tok2 tok3 tok4 "
    assert all(e["model"] == "api-chat@plain" for e in events[:-1])
    usage = events[-2]["usage"]
    assert events[-2]["choices"] == [] and (usage["prompt_tokens"], usage["completion_tokens"]) == (7, 5)
    (row,) = usage_rows(url, tenant_id)
    assert (row.prompt_tokens, row.completion_tokens, row.metered_by) == (7, 5, "upstream")


def test_text_completions_plain_and_streamed(gw, fake_openai):
    server, url, _ = gw
    tenant_id, key = make_tenant(url)
    r = post(server, key, {"model": "api-chat@plain", "prompt": "one two three", "max_tokens": 2}, "/v1/completions")
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["text"] == "tok0 tok1 " and r.json()["usage"]["prompt_tokens"] == 3
    assert fake_openai.seen()[-1]["prompt"] == "one two three"
    status, events, _ = stream(server, key, {"model": "api-chat@plain", "prompt": "one two", "max_tokens": 3},
                               "/v1/completions")
    assert status == 200 and "".join(e["choices"][0]["text"] for e in events[:-2]) == "tok0 tok1 tok2 "
    assert events[-2]["usage"]["completion_tokens"] == 3
    rows = usage_rows(url, tenant_id)
    assert [(r.prompt_tokens, r.completion_tokens) for r in rows] == [(3, 2), (2, 3)]


def test_the_upstreams_logprobs_come_back_in_chat_and_completions_shapes(gw, fake_openai):
    server, url, _ = gw
    _, key = make_tenant(url)
    body = {"model": "api-chat@plain", "messages": MSG, "max_tokens": 3, "logprobs": True, "top_logprobs": 2}
    r = post(server, key, body)
    assert r.status_code == 200, r.text
    content = r.json()["choices"][0]["logprobs"]["content"]
    assert [(c["token"], c["logprob"]) for c in content] == [("tok0 ", -0.5), ("tok1 ", -1.0), ("tok2 ", -1.5)]
    assert content[0]["bytes"] == list(b"tok0 ")
    assert [(t["token"], t["logprob"]) for t in content[2]["top_logprobs"]] == [("alt0 ", -10.0), ("alt1 ", -11.0)]
    assert fake_openai.seen()[-1]["logprobs"] is True and fake_openai.seen()[-1]["top_logprobs"] == 2
    status, events, _ = stream(server, key, body)
    streamed = [c for e in events if isinstance(e, dict) and e.get("choices")
                for c in ((e["choices"][0].get("logprobs") or {}).get("content") or [])]
    assert status == 200 and [c["token"] for c in streamed] == ["tok0 ", "tok1 ", "tok2 "]
    assert streamed[1]["top_logprobs"][0] == {"token": "alt0 ", "logprob": -10.0, "bytes": list(b"alt0 ")}
    r = post(server, key, {"model": "api-chat@plain", "prompt": "one two", "max_tokens": 2, "logprobs": 1},
             "/v1/completions")
    assert r.status_code == 200, r.text
    lp = r.json()["choices"][0]["logprobs"]
    assert lp["tokens"] == ["tok0 ", "tok1 "] and lp["token_logprobs"] == [-0.5, -1.0]
    assert lp["top_logprobs"] == [{"alt0 ": -10.0}, {"alt0 ": -10.0}] and lp["text_offset"] == [0, 5]


def test_tools_pass_through_natively_and_come_back_as_tool_calls(gw, fake_openai):
    server, url, _ = gw
    _, key = make_tenant(url)
    body = {"model": "api-chat@tools", "messages": MSG, "tools": TOOLS, "tool_choice": "auto"}
    r = post(server, key, body)
    assert r.status_code == 200, r.text
    sent = fake_openai.seen()[-1]
    assert sent["tools"] == TOOLS and sent["tool_choice"] == "auto" and sent["messages"] == MSG  # not a prompt
    choice = r.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["tool_calls"] == [{"id": "call_fake1", "type": "function", "function": {
        "name": "get_weather", "arguments": '{"city": "Paris"}'}}]
    _status, events, _ = stream(server, key, body)
    deltas = [c for e in events[:-1] if isinstance(e, dict) for ch in e.get("choices") or ()
              for c in ch["delta"].get("tool_calls") or ()]
    assert deltas[0] == {"index": 0, "id": "call_fake1", "type": "function",
                         "function": {"name": "get_weather", "arguments": ""}}
    assert "".join(d["function"]["arguments"] or "" for d in deltas) == '{"city": "Paris"}'
    assert all(d["index"] == 0 for d in deltas)
    finishes = [ch["finish_reason"] for e in events[:-1] if isinstance(e, dict) for ch in e.get("choices") or ()]
    assert finishes[-1] == "tool_calls" and events[-2]["usage"]["completion_tokens"] == 9


def test_a_tool_result_turn_reaches_the_upstream_as_sent(gw, fake_openai):
    server, url, _ = gw
    _, key = make_tenant(url)
    call = {"id": "call_fake1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    messages = [*MSG, {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_fake1", "content": "Sunny, 21 C"}]
    r = post(server, key, {"model": "api-chat@plain", "messages": messages, "tools": TOOLS, "max_tokens": 2,
                           "response_format": {"type": "text"}, "presence_penalty": 0.5})
    assert r.status_code == 200, r.text
    sent = fake_openai.seen()[-1]
    assert sent["messages"] == messages and sent["tools"] == TOOLS
    assert sent["response_format"] == {"type": "text"} and sent["presence_penalty"] == 0.5  # passed through


def test_without_upstream_usage_the_gateway_counts_and_says_so(gw):
    server, url, _ = gw
    tenant_id, key = make_tenant(url)
    status, events, _ = stream(server, key, {"model": "api-chat@nousage", "messages": MSG, "max_tokens": 4})
    assert status == 200 and text_of(events) == "tok0 tok1 tok2 tok3 "
    told = events[-2]["usage"]
    (row,) = usage_rows(url, tenant_id)
    assert row.metered_by == "gateway" and row.completion_tokens > 0
    assert (row.prompt_tokens, row.completion_tokens) == (told["prompt_tokens"], told["completion_tokens"])


@pytest.mark.parametrize("version, status, code", [
    ("e429", 429, "upstream_rate_limited"), ("e500", 502, "upstream_error"), ("badkey", 502, "upstream_error")])
def test_upstream_errors_are_clear_and_unbilled(gw, version, status, code):
    server, url, _captured = gw
    tenant_id, key = make_tenant(url)
    r = post(server, key, {"model": f"api-chat@{version}", "messages": MSG})
    assert r.status_code == status and r.json()["error"]["code"] == code
    assert int(r.headers["retry-after"]) >= (7 if version == "e429" else 1)
    assert usage_rows(url, tenant_id) == []
    s, _events, _ = stream(server, key, {"model": f"api-chat@{version}", "messages": MSG})
    assert s == status  # a stream that fails before its first byte is an HTTP error, not a broken stream
    assert WRONG_KEY not in r.text and UPSTREAM_KEY not in r.text


def test_an_upstream_400_is_the_clients_error(gw):
    server, url, _ = gw
    tenant_id, key = make_tenant(url)
    r = post(server, key, {"model": "api-chat@e400", "messages": MSG})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    assert "fake failure 400" in r.json()["error"]["message"]
    assert usage_rows(url, tenant_id) == []


@pytest.mark.parametrize("version", ["silent", "slowfirst"])
def test_first_token_timeout(gw, version):
    server, url, _ = gw
    tenant_id, key = make_tenant(url)
    started = time.monotonic()
    r = post(server, key, {"model": f"api-chat@{version}", "messages": MSG})
    took = time.monotonic() - started
    assert r.status_code == 504 and r.json()["error"]["code"] == "upstream_timeout"
    assert 0.9 <= took < 2.0  # first_token_timeout_s: 1.0
    assert usage_rows(url, tenant_id) == []


def test_idle_timeout_ends_the_stream_with_an_error_and_bills_what_was_delivered(gw):
    server, url, _ = gw
    tenant_id, key = make_tenant(url)
    started = time.monotonic()
    status, events, _ = stream(server, key, {"model": "api-chat@idle", "messages": MSG})
    took = time.monotonic() - started
    assert status == 200 and text_of(events) == "tok0 tok1 "
    assert 0.9 <= took < 2.5  # idle_timeout_s: 1.0, although the upstream sends a ping every 0.2 s
    assert events[-2]["error"]["code"] == "generation_failed" and events[-1] == "[DONE]"
    told = events[-3]["usage"]
    (row,) = usage_rows(url, tenant_id)
    assert row.status == "error" and row.completion_tokens == told["completion_tokens"] >= 2
    assert row.prompt_tokens == told["prompt_tokens"] and row.metered_by == "gateway"


def test_a_client_that_leaves_mid_stream_is_billed_what_was_delivered(gw):
    server, url, _ = gw
    tenant_id, key = make_tenant(url)
    with httpx.stream("POST", f"{server.url}/v1/chat/completions", timeout=30,
                      headers={"Authorization": f"Bearer {key}"},
                      json={"model": "api-chat@idle", "messages": MSG, "stream": True}) as r:
        seen = ""
        for line in r.iter_lines():
            if line.startswith("data: {"):
                seen += json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
            if seen == "tok0 tok1 ":
                break  # leave: the upstream would only send pings from here
    deadline = time.monotonic() + 10
    while not (rows := usage_rows(url, tenant_id)) and time.monotonic() < deadline:
        time.sleep(0.05)
    (row,) = rows
    assert row.status == "aborted" and row.metered_by == "gateway"
    assert row.completion_tokens == 4  # "tok0 " and "tok1 ": 5 bytes each, 2 tokens each by the byte bound


def test_a_stream_cut_mid_answer_ends_with_an_error_event_and_bills_the_delivered_tokens(gw):
    server, url, _ = gw
    tenant_id, key = make_tenant(url)
    status, events, _ = stream(server, key, {"model": "api-chat@cut", "messages": MSG})
    assert status == 200 and text_of(events) == "tok0 tok1 "
    assert events[-2]["error"]["code"] == "generation_failed"
    told = events[-3]["usage"]
    (row,) = usage_rows(url, tenant_id)
    assert row.status == "error" and (row.prompt_tokens, row.completion_tokens) == (
        told["prompt_tokens"], told["completion_tokens"])


def test_a_down_upstream_falls_back_to_the_pool_or_fails_fast_unbilled(gw):
    server, url, _ = gw
    tenant_id, key = make_tenant(url)
    r = post(server, key, {"model": "burst", "messages": MSG, "max_tokens": 4})
    assert r.status_code == 200 and r.json()["model"] == FP32  # served by the local version
    s, events, headers = stream(server, key, {"model": "burst", "messages": MSG, "max_tokens": 4})
    assert s == 200 and headers["x-tollgate-model"] == FP32 and events[-1] == "[DONE]"  # one clean stream
    started = time.monotonic()
    r = post(server, key, {"model": "api-dead", "messages": MSG})
    assert r.status_code in (502, 503, 504) and time.monotonic() - started < 5
    assert "retry-after" in r.headers
    assert [row.version for row in usage_rows(url, tenant_id)] == [FP32, FP32]  # the failure is unbilled


def test_an_upstream_at_max_concurrency_is_overloaded(gw):
    server, url, _ = gw
    _, key = make_tenant(url)
    streaming, checked = threading.Event(), threading.Event()

    def hold_the_slot():
        with httpx.stream("POST", f"{server.url}/v1/chat/completions", timeout=30,
                          headers={"Authorization": f"Bearer {key}"},
                          json={"model": "api-narrow", "messages": MSG, "stream": True, "max_tokens": 20}) as r:
            for line in r.iter_lines():
                if '"tok0 "' in line:
                    streaming.set()
                if checked.is_set():  # leave the 20 slow tokens (6 s) unread once the test has its answers
                    break

    holder = threading.Thread(target=hold_the_slot)
    holder.start()
    try:
        assert streaming.wait(10)
        r = post(server, key, {"model": "narrow-or-local", "messages": MSG, "max_tokens": 4})
        assert r.status_code == 200 and r.json()["model"] == FP32  # the pool took it
        assert post(server, key, {"model": "api-narrow", "messages": MSG}).status_code == 503
    finally:
        checked.set()
        holder.join(10)


def test_a_killed_upstream(gw, killable):
    server, url, _ = gw
    tenant_id, key = make_tenant(url)
    assert post(server, key, {"model": "api-killable", "messages": MSG}).status_code == 200
    killable.kill()
    r = post(server, key, {"model": "burst-killable", "messages": MSG})
    assert r.status_code == 200 and r.json()["model"] == FP32
    started = time.monotonic()
    r = post(server, key, {"model": "api-killable", "messages": MSG})
    assert r.status_code in (502, 503, 504) and time.monotonic() - started < 5
    assert [row.version for row in usage_rows(url, tenant_id)] == ["api-killable@v1", FP32]


def test_embeddings_from_an_upstream(gw, fake_openai):
    server, url, _ = gw
    tenant_id, key = make_tenant(url)
    r = post(server, key, {"model": "api-embed", "input": ["one two", "three"]}, "/v1/embeddings")
    assert r.status_code == 200, r.text
    body = r.json()
    assert [d["embedding"] for d in body["data"]] == [[7.0, 2.0, 0.5], [5.0, 1.0, 0.5]]  # in input order
    assert body["model"] == "api-embed" and body["usage"]["prompt_tokens"] == 3
    sent = fake_openai.seen()[-1]
    assert sent["model"] == "fake-embed" and sent["input"] == ["one two", "three"]
    broken = post(server, key, {"model": "api-embed-broken", "input": "x"}, "/v1/embeddings")
    assert broken.status_code == 502 and "retry-after" in broken.headers
    (row,) = usage_rows(url, tenant_id)
    assert (row.model, row.prompt_tokens, row.metered_by) == ("api-embed", 3, "upstream")


def test_the_responses_api_serves_upstream_versions(gw):
    server, url, _ = gw
    tenant_id, key = make_tenant(url)
    r = post(server, key, {"model": "api-chat@plain", "input": "Say hi to me.", "max_output_tokens": 3},
             "/v1/responses")
    assert r.status_code == 200, r.text
    assert "tok0 tok1 tok2" in json.dumps(r.json()["output"])
    (row,) = usage_rows(url, tenant_id)
    assert row.metered_by == "upstream" and row.completion_tokens == 3


def test_models_lists_local_and_upstream_models(gw):
    server, url, _ = gw
    _, key = make_tenant(url)
    listed = httpx.get(f"{server.url}/v1/models", headers={"Authorization": f"Bearer {key}"}).json()["data"]
    ids = {m["id"] for m in listed}
    assert {"smollm2-135m-instruct", "api-chat", "api-dead", "burst", "api-embed"} <= ids


def test_economics_lists_upstream_models_at_their_provider_prices(gw):
    server, url, _ = gw
    _tenant_id, key = make_tenant(url)
    assert post(server, key, {"model": "api-chat@plain", "messages": MSG, "max_tokens": 4}).status_code == 200
    assert post(server, key, {"model": FP32, "messages": MSG, "max_tokens": 4}).status_code == 200
    report = httpx.get(f"{server.url}/admin/economics", headers={"Authorization": f"Bearer {ADMIN_KEY}"}).json()
    (model,) = [m for m in report["models"] if m["model"] == "api-chat"]
    (plain,) = [v for v in model["versions"] if v["version"] == "api-chat@plain"]
    assert plain["cost_basis"] == "provider_prices" and plain["replica_hours"] in ("0", "0.000000")
    # every api-chat@plain request so far: tokens x the provider's prices (0.5 in, 1.0 out per million)
    rows = [r for r in usage_rows_all(url) if r.version == "api-chat@plain"]
    expected = sum(r.prompt_tokens * 0.5 + r.completion_tokens * 1.0 for r in rows) / 1e6
    assert float(plain["provider_cost"]) == pytest.approx(expected, abs=1e-9)
    assert float(plain["cost"]) == float(plain["provider_cost"]) and float(plain["idle_cost"]) == 0
    assert float(plain["revenue"]) == pytest.approx(sum(float(r.cost) for r in rows), abs=1e-9)
    assert float(model["provider_cost"]) >= float(plain["provider_cost"])
    (pool,) = [m for m in report["models"] if m["model"] == "smollm2-135m-instruct"]
    assert all(v["cost_basis"] == "replica_hours" for v in pool["versions"])


def usage_rows_all(url):
    from sqlalchemy import select

    from gateway.db.database import Database
    from gateway.db.models.usage import Usage

    db = Database(url)
    try:
        with db.session() as session:
            return list(session.scalars(select(Usage)))
    finally:
        db.dispose()


def test_no_provider_key_in_the_logs(gw):
    """Runs last in the module: every request above (401, timeouts, errors) has been logged by now."""
    _, _, captured = gw
    assert captured.lines  # the requests above were logged
    text = "\n".join(captured.lines)
    assert UPSTREAM_KEY not in text and WRONG_KEY not in text


def test_messages_api_over_an_upstream_returns_its_native_tool_calls_as_tool_use(gw, fake_openai):
    """The Messages API in front of an upstream version: tools reach it natively (not as a prompt), and its own
    tool calls come back as tool_use blocks, whole and streamed (anthropic SDK)."""
    import anthropic

    server, url, _ = gw
    _, key = make_tenant(url)
    client = anthropic.Anthropic(base_url=server.url, api_key=key, max_retries=0)
    tools = [{"name": "get_weather", "description": "Weather in a city.",
              "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
    message = client.messages.create(model="api-chat@tools", max_tokens=64, tools=tools,
                                     messages=[{"role": "user", "content": "Say hi to me."}])
    sent = fake_openai.seen()[-1]
    assert sent["tools"][0]["function"]["name"] == "get_weather" and sent["messages"][-1]["content"] == "Say hi to me."
    assert message.stop_reason == "tool_use"
    [call] = [b for b in message.content if b.type == "tool_use"]
    assert (call.name, call.input) == ("get_weather", {"city": "Paris"})
    with client.messages.stream(model="api-chat@tools", max_tokens=64, tools=tools,
                                messages=[{"role": "user", "content": "Say hi to me."}]) as s:
        final = s.get_final_message()
    [call] = [b for b in final.content if b.type == "tool_use"]
    assert (call.name, call.input, final.stop_reason) == ("get_weather", {"city": "Paris"}, "tool_use")
    assert final.usage.output_tokens == 9
