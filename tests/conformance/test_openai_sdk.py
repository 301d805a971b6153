"""The OpenAI surface real clients use, through the official SDK unchanged (extension fields via extra_body),
against the real model; each request's bill equals the usage it was told."""
from __future__ import annotations

import math

import httpx
import pytest
from openai import OpenAI

from tests.gateway.support import make_tenant, usage_rows, wait_usage_rows

pytestmark = pytest.mark.model

MODEL = "smollm2-135m-instruct"
ASK = [{"role": "user", "content": "Name a colour."}]


@pytest.fixture(scope="module")
def tenant(real_gateway):
    server, settings = real_gateway
    tenant_id, key = make_tenant(settings.resolved_database_url, cache_enabled=False)
    client = OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)
    return tenant_id, key, client, server, settings.resolved_database_url


def billed(url: str, tenant_id: str, request_id: str):
    rows = [r for r in wait_usage_rows(url, tenant_id, 1) if r.request_id == request_id]
    deadline = 50
    while not rows and deadline:
        deadline -= 1
        rows = [r for r in usage_rows(url, tenant_id) if r.request_id == request_id]
    assert len(rows) == 1, f"one ledger row for {request_id}"
    return rows[0]


def test_chat_logprobs_with_alternatives(tenant):
    tenant_id, _, client, _, url = tenant
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=ASK, max_tokens=5, temperature=0,
                                                           logprobs=True, top_logprobs=3)
    r = raw.parse()
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    assert "".join(t.token for t in content).startswith(r.choices[0].message.content[:3])
    for t in content:
        assert t.logprob <= 0 and len(t.top_logprobs) == 3 and bytes(t.bytes).decode() == t.token
        assert t.top_logprobs[0].logprob >= t.top_logprobs[-1].logprob
        assert math.isclose(t.logprob, t.top_logprobs[0].logprob, abs_tol=1e-4)  # greedy: the likeliest
    row = billed(url, tenant_id, raw.headers["x-request-id"])
    assert (row.prompt_tokens, row.completion_tokens) == (r.usage.prompt_tokens, r.usage.completion_tokens)


def test_streamed_logprobs_add_up_to_the_whole(tenant):
    _, _, client, _, _ = tenant
    whole = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=6, temperature=0, logprobs=True)
    chunks = list(client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=6, temperature=0,
                                                 logprobs=True, stream=True))
    streamed = [t for c in chunks if c.choices and c.choices[0].logprobs for t in c.choices[0].logprobs.content]
    assert [t.token for t in streamed] == [t.token for t in whole.choices[0].logprobs.content]
    assert [round(t.logprob, 4) for t in streamed] == [round(t.logprob, 4) for t in whole.choices[0].logprobs.content]


def test_n_choices_share_one_prompt_and_bill_every_completion(tenant):
    tenant_id, _, client, _, url = tenant
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=ASK, max_tokens=8, n=3,
                                                           temperature=0.9, seed=7)
    r = raw.parse()
    assert [c.index for c in r.choices] == [0, 1, 2]
    assert all(c.message.content and c.finish_reason in ("stop", "length") for c in r.choices)
    row = billed(url, tenant_id, raw.headers["x-request-id"])
    assert row.prompt_tokens == r.usage.prompt_tokens  # the prompt once
    assert row.completion_tokens == r.usage.completion_tokens >= 3  # every completion's tokens


def test_streamed_n_choices(tenant):
    _, _, client, _, _ = tenant
    chunks = list(client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=6, n=2, temperature=0,
                                                 stream=True, stream_options={"include_usage": True}))
    texts = {0: "", 1: ""}
    for c in chunks:
        for choice in c.choices:
            texts[choice.index] += choice.delta.content or ""
    assert texts[0] and texts[0] == texts[1]  # greedy children are the same as each other
    one = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=6, temperature=0)
    assert texts[0] == one.choices[0].message.content
    assert chunks[-1].usage.completion_tokens == 2 * one.usage.completion_tokens


def test_vllm_extension_fields_through_extra_body(tenant):
    _, _, client, _, _ = tenant
    r = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=12, temperature=0,
                                       extra_body={"ignore_eos": True, "min_tokens": 12, "top_k": 5,
                                                   "repetition_penalty": 1.1, "skip_special_tokens": True})
    assert r.usage.completion_tokens == 12 and r.choices[0].finish_reason == "length"
    plain = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=12, temperature=0, logprobs=True)
    second = plain.choices[0].logprobs.content[1]  # stop on the second token's id: one token comes out
    ids = httpx.post(f"{tenant[3].url}/tokenize", headers={"Authorization": f"Bearer {tenant[1]}"},
                     json={"model": MODEL, "prompt": second.token}).json()["tokens"]
    stop = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=12, temperature=0,
                                          extra_body={"stop_token_ids": ids[:1]})
    assert stop.choices[0].finish_reason == "stop" and stop.usage.completion_tokens == 2


def test_unknown_fields_are_ignored_and_named(tenant):
    _, key, _, server, _ = tenant
    resp = httpx.post(f"{server.url}/v1/chat/completions", headers={"Authorization": f"Bearer {key}"}, timeout=60,
                      json={"model": MODEL, "messages": ASK, "max_tokens": 2, "guided_whatever": 1, "chat_id": "x"})
    assert resp.status_code == 200
    assert resp.headers["x-tollgate-ignored-fields"] == "guided_whatever,chat_id"


def test_continuous_usage_stats_on_every_chunk(tenant):
    _, _, client, _, _ = tenant
    chunks = list(client.chat.completions.create(
        model=MODEL, messages=ASK, max_tokens=5, temperature=0, stream=True,
        stream_options={"include_usage": True, "continuous_usage_stats": True}))
    content = [c for c in chunks if c.choices and (c.choices[0].delta.content or c.choices[0].finish_reason)]
    assert content and all(c.usage is not None for c in content)
    counts = [c.usage.completion_tokens for c in content]
    assert counts == sorted(counts) and counts[-1] == chunks[-1].usage.completion_tokens


def test_completions_logprobs_and_best_of(tenant):
    tenant_id, _, client, _, url = tenant
    raw = client.completions.with_raw_response.create(model=MODEL, prompt="The capital of France is",
                                                      max_tokens=4, temperature=0.8, seed=3, best_of=3, logprobs=2)
    r = raw.parse()
    assert len(r.choices) == 1
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset)
    assert lp.text_offset == sorted(lp.text_offset) and lp.text_offset[0] == 0
    assert "".join(lp.tokens) == r.choices[0].text
    row = billed(url, tenant_id, raw.headers["x-request-id"])
    assert row.completion_tokens == r.usage.completion_tokens > len(lp.tokens)  # all three were generated


def test_models_health_tokenize_detokenize(tenant):
    _, key, client, server, _ = tenant
    assert client.models.retrieve(MODEL).id == MODEL
    with pytest.raises(Exception) as missing:
        client.models.retrieve("gpt-17")
    assert getattr(missing.value, "status_code", None) == 404
    assert httpx.get(f"{server.url}/health").status_code == 200
    h = {"Authorization": f"Bearer {key}"}
    tok = httpx.post(f"{server.url}/tokenize", headers=h, json={"model": MODEL, "messages": ASK}).json()
    assert tok["count"] == len(tok["tokens"]) > 3 and tok["max_model_len"] > 0
    plain = httpx.post(f"{server.url}/tokenize", headers=h, json={"model": MODEL, "prompt": "Hello world"}).json()
    back = httpx.post(f"{server.url}/detokenize", headers=h, json={"model": MODEL, "tokens": plain["tokens"]}).json()
    assert back == {"prompt": "Hello world"}
    bad = httpx.post(f"{server.url}/detokenize", headers=h, json={"model": MODEL, "tokens": [10**9]})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "tokens"
    assert httpx.post(f"{server.url}/tokenize", json={"model": MODEL, "prompt": "x"}).status_code == 401


def test_responses_whole_streamed_and_continued(tenant):
    tenant_id, _, client, _, url = tenant
    raw = client.responses.with_raw_response.create(model=MODEL, input="Name a colour.", max_output_tokens=8,
                                                    temperature=0, instructions="Answer in one word.")
    first = raw.parse()
    assert first.status in ("completed", "incomplete") and first.output_text
    row = billed(url, tenant_id, raw.headers["x-request-id"])
    assert (row.prompt_tokens, row.completion_tokens) == (first.usage.input_tokens, first.usage.output_tokens)
    events = list(client.responses.create(model=MODEL, input="And another?", max_output_tokens=8, temperature=0,
                                          previous_response_id=first.id, stream=True))
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] in ("response.completed", "response.incomplete")
    final = events[-1].response
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == final.output_text
    assert final.usage.input_tokens > first.usage.input_tokens  # the first exchange came along
