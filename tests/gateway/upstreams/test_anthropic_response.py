"""Anthropic Messages answers -> OpenAI chat.completion (golden), and Anthropic error bodies."""
from __future__ import annotations

import json

import pytest

from gateway.upstreams.anthropic_wire import STOP_REASONS, error_from, from_message
from tests.gateway.upstreams.fake_anthropic import message, plain, text_message, tool_message, tool_use

MODEL = "claude-alias@v2"


def without_created(completion: dict) -> dict:
    assert isinstance(completion.pop("created"), int)
    return completion


def test_a_text_answer():
    answer = text_message("Hello there!", input_tokens=12, output_tokens=4, model="claude-upstream-id")
    assert without_created(from_message(plain(answer), model=MODEL)) == {
        "id": f"chatcmpl-{answer['id']}", "object": "chat.completion", "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello there!", "refusal": None},
                     "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16,
                  "prompt_tokens_details": {"cached_tokens": 0}}}


def test_parallel_tool_calls_with_text():
    answer = tool_message(tool_use("get_weather", {"city": "Paris"}, id="toolu_a"),
                          tool_use("get_time", {}, id="toolu_b"), text="Checking.")
    choice = from_message(plain(answer), model=MODEL)["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Checking."
    assert choice["message"]["tool_calls"] == [
        {"id": "toolu_a", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"id": "toolu_b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]


def test_tool_calls_alone_leave_content_empty_and_thinking_is_dropped():
    answer = message([{"type": "thinking", "thinking": "hmm", "signature": "s"},
                      tool_use("get_time", {}, id="toolu_c")], stop_reason="tool_use")
    reply = from_message(plain(answer), model=MODEL)["choices"][0]["message"]
    assert reply["content"] == "" and [c["id"] for c in reply["tool_calls"]] == ["toolu_c"]


@pytest.mark.parametrize("stop_reason, finish", [
    ("end_turn", "stop"), ("max_tokens", "length"), ("stop_sequence", "stop"), ("tool_use", "tool_calls"),
    ("refusal", "content_filter"), ("pause_turn", "stop")])
def test_the_stop_reason_table(stop_reason, finish):
    assert STOP_REASONS[stop_reason] == finish
    answer = text_message("x", stop_reason=stop_reason)
    assert from_message(plain(answer), model=MODEL)["choices"][0]["finish_reason"] == finish


def test_max_tokens_during_a_tool_call_is_length_not_tool_calls():
    answer = tool_message(tool_use("get_weather", {"city": "Par"}), stop_reason="max_tokens")
    choice = from_message(plain(answer), model=MODEL)["choices"][0]
    assert choice["finish_reason"] == "length"
    assert choice["message"]["tool_calls"][0]["function"]["name"] == "get_weather"


def test_cached_prompt_tokens_count_as_prompt_tokens():
    answer = text_message("x", input_tokens=5, output_tokens=3, cache_read=100, cache_creation=20)
    assert from_message(plain(answer), model=MODEL)["usage"] == {
        "prompt_tokens": 125, "completion_tokens": 3, "total_tokens": 128,
        "prompt_tokens_details": {"cached_tokens": 100}}


def test_null_cache_counts_read_as_zero():
    answer = text_message("x", input_tokens=5, output_tokens=3)
    answer["usage"].update(cache_read_input_tokens=None, cache_creation_input_tokens=None)
    assert from_message(plain(answer), model=MODEL)["usage"]["prompt_tokens"] == 5


def test_error_bodies_in_anthropics_shape():
    body = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).encode()
    assert error_from(529, body) == ("overloaded_error", "Overloaded")


@pytest.mark.parametrize("status, kind", [(429, "rate_limit_error"), (529, "overloaded_error"), (500, "api_error"),
                                          (502, "api_error"), (401, "authentication_error")])
def test_bodies_that_are_not_json_give_the_status_type_and_never_the_body(status, kind):
    body = b"<html>bad gateway; upstream said x-api-key: sk-ant-secret-canary-123456</html>"
    error_type, text = error_from(status, body)
    assert error_type == kind and "canary" not in text and str(status) in text


@pytest.mark.parametrize("body", [b"", b"null", b"[1, 2]", b'{"error": "flat string"}', b"\xff\xfe",
                                  b'{"type": "error"}'])
def test_odd_bodies_do_not_raise(body):
    kind, text = error_from(503, body)
    assert kind == "api_error" and text


def test_keys_echoed_in_an_error_message_are_redacted():
    for secret in ("sk-ant-api03-canary0123456789", "tg-tenantkeycanary0123", "Bearer canarytoken0123456789",
                   'api_key="canary0123456789"'):
        body = json.dumps({"type": "error", "error": {"type": "authentication_error",
                                                      "message": f"invalid key {secret} given"}}).encode()
        kind, text = error_from(401, body)
        assert kind == "authentication_error" and "canary" not in text and "[redacted]" in text
    body = json.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                  "message": "max_tokens: Field required"}}).encode()
    assert error_from(400, body) == ("invalid_request_error", "max_tokens: Field required")
