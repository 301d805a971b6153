"""A Messages request as the chat request the pipeline serves (pure: no app, no model)."""
from __future__ import annotations

import json

import pytest

from gateway.api.v1.body import parse
from gateway.api.v1.messages.translate import chat_request, counting_request
from gateway.domain.errors import APIError
from gateway.schemas.anthropic import CountTokensRequest, MessagesRequest, error_body

TOOL = {"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}


def request(**body) -> MessagesRequest:
    return parse(MessagesRequest, json.dumps({"model": "m", "max_tokens": 8, **body}).encode())


def test_system_sampling_and_user_map_to_chats_fields():
    chat = chat_request(request(system=[{"type": "text", "text": "A."}, {"type": "text", "text": "B."}],
                                messages=[{"role": "user", "content": "hi"}], stop_sequences=["x"],
                                temperature=0.2, top_p=0.5, top_k=3, metadata={"user_id": "u"}, stream=True))
    assert [m.model_dump(exclude_none=True) for m in chat.messages] == [
        {"role": "system", "content": "A.\n\nB."}, {"role": "user", "content": "hi"}]
    assert (chat.max_tokens, chat.stop, chat.temperature, chat.top_p, chat.top_k, chat.user, chat.stream) == (
        8, ["x"], 0.2, 0.5, 3, "u", True)


def test_tool_use_and_tool_result_blocks_become_tool_calls_and_tool_messages():
    chat = chat_request(request(tools=[TOOL], messages=[
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
                                          {"type": "text", "text": "Looking."},
                                          {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                           "input": {"city": "Paris"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": [{"type": "text", "text": "sunny"}]},
                                     {"type": "tool_result", "tool_use_id": "toolu_2", "content": "boom",
                                      "is_error": True},
                                     {"type": "text", "text": "And tomorrow?"}]}]))
    got = [m.model_dump(exclude_none=True) for m in chat.messages]
    assert got[1] == {"role": "assistant", "content": "Looking.", "tool_calls": [
        {"id": "toolu_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
    assert got[2:] == [{"role": "tool", "content": "sunny", "tool_call_id": "toolu_1"},
                       {"role": "tool", "content": "Error: boom", "tool_call_id": "toolu_2"},
                       {"role": "user", "content": "And tomorrow?"}]
    assert chat.tool_set.mode == "auto" and chat.tool_set.names == ("get_weather",)


@pytest.mark.parametrize("choice, mode, forced", [({"type": "auto"}, "auto", None), ({"type": "any"}, "required", None),
                                                  ({"type": "none"}, "none", None),
                                                  ({"type": "tool", "name": "get_weather"}, "function",
                                                   "get_weather")])
def test_tool_choice(choice, mode, forced):
    tools = chat_request(request(tools=[TOOL], tool_choice=choice, messages=[{"role": "user", "content": "x"}]))
    assert (tools.tool_set.mode, tools.tool_set.forced) == (mode, forced)


@pytest.mark.parametrize("content, param", [
    ([{"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}], "messages.0.content.0"),
    ([{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "image", "source": {}}]}],
     "messages.0.content.0.content.0"),
    ([{"type": "tool_use", "id": "t", "name": "f", "input": {}}], "messages.0.content.0"),
])
def test_what_the_model_cannot_read_is_a_400_naming_the_block(content, param):
    with pytest.raises(APIError) as e:
        chat_request(request(messages=[{"role": "user", "content": content}]))
    assert (e.value.status, e.value.param) == (400, param)


def test_count_tokens_renders_the_same_prompt():
    body = {"model": "m", "system": "S.", "tools": [TOOL], "messages": [{"role": "user", "content": "hi"}]}
    counted = counting_request(parse(CountTokensRequest, json.dumps(body).encode()))
    sent = chat_request(request(**{k: v for k, v in body.items() if k != "model"}))
    assert counted.engine_messages(counted.tool_set) == sent.engine_messages(sent.tool_set)


@pytest.mark.parametrize("status, kind", [(400, "invalid_request_error"), (401, "authentication_error"),
                                          (403, "permission_error"), (404, "not_found_error"),
                                          (413, "request_too_large"), (429, "rate_limit_error"), (500, "api_error"),
                                          (502, "api_error"), (503, "overloaded_error"), (504, "timeout_error"),
                                          (409, "invalid_request_error")])
def test_error_types_by_status(status, kind):
    assert error_body(status, "m") == {"type": "error", "error": {"type": kind, "message": "m"}}


def test_a_prefill_is_refused():
    with pytest.raises(APIError) as e:
        chat_request(request(messages=[{"role": "user", "content": "JSON please"},
                                       {"role": "assistant", "content": "{"}]))
    assert (e.value.status, e.value.param) == (400, "messages.1") and "prefill" in e.value.message
