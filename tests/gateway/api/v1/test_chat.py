"""Chat completions through the official SDK against the real model."""
from __future__ import annotations

import pytest
from openai import OpenAI

from tests.gateway.support import FP32, make_tenant

pytestmark = pytest.mark.model

MESSAGES = [{"role": "user", "content": "Say hi."}]


@pytest.fixture(scope="module")
def client(real_gateway):
    server, settings = real_gateway
    # These tests are about the engine's answers: the semantic cache must not answer for it.
    _, key = make_tenant(settings.resolved_database_url, cache_enabled=False)
    return OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)


def test_plain_chat(client):
    raw = client.chat.completions.with_raw_response.create(model="smollm2-135m-instruct", messages=MESSAGES,
                                                           max_tokens=5, temperature=0)
    resp = raw.parse()
    assert resp.object == "chat.completion"
    assert resp.choices[0].message.role == "assistant"
    assert resp.choices[0].finish_reason in ("stop", "length")
    assert 1 <= resp.usage.completion_tokens <= 5
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens
    assert raw.headers["x-tollgate-model"] == FP32
    assert raw.headers["x-request-id"].startswith("req_")


def test_streamed_chat_with_usage(client):
    stream = client.chat.completions.create(model="smollm2-135m-instruct", messages=MESSAGES, max_tokens=6,
                                            temperature=0, stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finish and finish[-1] in ("stop", "length")
    usage = chunks[-1].usage
    assert chunks[-1].choices == [] and usage is not None
    assert 1 <= usage.completion_tokens <= 6
    assert text


def test_greedy_stream_matches_plain(client):
    plain = client.chat.completions.create(model="smollm2-135m-instruct", messages=MESSAGES, max_tokens=6,
                                           temperature=0)
    stream = client.chat.completions.create(model="smollm2-135m-instruct", messages=MESSAGES, max_tokens=6,
                                            temperature=0, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == plain.choices[0].message.content


def test_alias_routes_to_a_loaded_version(client):
    raw = client.chat.completions.with_raw_response.create(model="chat", messages=MESSAGES, max_tokens=2)
    assert raw.headers["x-tollgate-model"] == FP32
    assert raw.parse().usage.completion_tokens >= 1
