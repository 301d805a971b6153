"""Golden round trips over HTTP: OpenAI chat requests converted, sent to the fake Messages server (which checks
them as strictly as the API), and its answers translated back; streamed chunks accumulated with the `openai`
SDK's own stream state must equal the non-streamed translation of the same answer."""
from __future__ import annotations

import json

import httpx
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from gateway.upstreams.anthropic_wire import (StreamTranslator, UpstreamStreamError, error_from, from_message,
                                              to_messages_request)
from tests.gateway.upstreams.fake_anthropic import (API_KEY, Answer, Cut, Fail, StreamError, message, text_message,
                                                    tool_message, tool_use)

MODEL = "assistant@api"
HEADERS = {"x-api-key": API_KEY, "anthropic-version": "2023-06-01"}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}
# A chat with every part the conversion handles: system + developer, a greeting first, images, a parallel
# tool round with results, stop, sampling, tool_choice, parallel_tool_calls, user.
RICH_CHAT = {
    "model": "assistant", "max_completion_tokens": 300, "stop": ["###"], "temperature": 1.4, "top_p": 0.95,
    "user": "u-1", "tools": [WEATHER, TIME], "tool_choice": "auto", "parallel_tool_calls": True,
    "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "assistant", "content": "Hi! Ask me about the weather."},
        {"role": "developer", "content": "Use tools when asked about weather."},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Oslo? This is my view:"},
                                     {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}}]},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "toolu_p", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}},
            {"id": "toolu_o", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "toolu_p", "content": "18C"},
        {"role": "tool", "tool_call_id": "toolu_o", "content": "4C"},
        {"role": "user", "content": "And the time?"}]}

ANSWERS = {
    "text": lambda: text_message("Paris is warmer: 18C against 4C.", input_tokens=230, output_tokens=12),
    "parallel tool calls": lambda: tool_message(
        tool_use("get_time", {}), tool_use("get_weather", {"city": "Paris", "days": [1, 2]}),
        text="Let me check.", input_tokens=240, output_tokens=55),
    "stop sequence": lambda: text_message("It is noon", stop_reason="stop_sequence", stop_sequence="###"),
    "length in a tool call": lambda: tool_message(tool_use("get_weather", {"city": "Pa"}), stop_reason="max_tokens"),
    "cached prompt": lambda: text_message("Noon.", input_tokens=3, output_tokens=2, cache_read=200, cache_creation=30),
    "refusal": lambda: message([], stop_reason="refusal", output_tokens=0),
}


def post(url: str, body: dict) -> httpx.Response:
    return httpx.post(f"{url}/v1/messages", json=body, headers=HEADERS, timeout=10)


def sse_events(url: str, body: dict):
    """(event, data) pairs as the stream delivers them."""
    with httpx.stream("POST", f"{url}/v1/messages", json=body, headers=HEADERS, timeout=10) as answer:
        assert answer.status_code == 200, answer.read()
        event = None
        for line in answer.iter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                yield event, json.loads(line[5:])


def streamed_completion(url: str, body: dict, tools: list[dict]) -> dict:
    translator = StreamTranslator(model=MODEL)
    state = ChatCompletionStreamState(input_tools=tools)
    for event, data in sse_events(url, body):
        for chunk in translator.feed(event, data):
            state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    assert translator.finished
    # the SDK's accumulated snapshot (get_final_completion would also parse, and refuses length/content_filter)
    return state.current_completion_snapshot.model_dump(exclude={"created"})


def as_completion(completion: dict) -> dict:
    return ChatCompletion.model_validate(completion).model_dump(exclude={"created"})


def test_a_rich_chat_converts_into_a_request_the_api_accepts(fake_anthropic):
    fake_anthropic.script(Answer(ANSWERS["text"]()))
    answer = post(fake_anthropic.url, to_messages_request(RICH_CHAT, model="claude-fake-1"))
    assert answer.status_code == 200, answer.text
    sent = fake_anthropic.requests[0].body
    assert sent["system"] == "You are terse.\n\nUse tools when asked about weather."
    assert [t["role"] for t in sent["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    assert sent["temperature"] == 1.0 and sent["max_tokens"] == 300 and sent["tool_choice"] == {"type": "auto"}


@pytest.mark.parametrize("name", list(ANSWERS))
def test_streamed_chunks_accumulate_to_the_non_streamed_translation(fake_anthropic, name):
    scripted = ANSWERS[name]()
    fake_anthropic.script(Answer(scripted), Answer(scripted))
    request = to_messages_request(RICH_CHAT, model="claude-fake-1")
    plain = post(fake_anthropic.url, request)
    assert plain.status_code == 200, plain.text
    expected = as_completion(from_message(plain.json(), model=MODEL))
    streamed = streamed_completion(fake_anthropic.url, to_messages_request(RICH_CHAT | {"stream": True},
                                                                          model="claude-fake-1"), RICH_CHAT["tools"])
    # the SDK's snapshot keeps its own bookkeeping (`parsed`, each call's stream `index`); the rest must match
    for choice in streamed["choices"]:
        choice["message"].pop("parsed", None)
        for call in choice["message"].get("tool_calls") or []:
            call.pop("index")
            call["function"].pop("parsed_arguments", None)
    assert streamed == expected
    assert expected["model"] == MODEL


def test_finish_reasons_and_usage_of_the_goldens(fake_anthropic):
    finishes = {}
    for name, make in ANSWERS.items():
        fake_anthropic.script(Answer(make()))
        answer = post(fake_anthropic.url, to_messages_request(RICH_CHAT, model="m")).json()
        completion = from_message(answer, model=MODEL)
        finishes[name] = completion["choices"][0]["finish_reason"]
        if name == "cached prompt":
            assert completion["usage"]["prompt_tokens"] == 233
    assert finishes == {"text": "stop", "parallel tool calls": "tool_calls", "stop sequence": "stop",
                        "length in a tool call": "length", "cached prompt": "stop", "refusal": "content_filter"}


def test_an_empty_tool_list_reaches_the_api_as_no_tools(fake_anthropic):
    fake_anthropic.script(Answer(text_message("ok")))
    chat = {"model": "a", "messages": [{"role": "user", "content": "Hi"}], "tools": [], "tool_choice": "none"}
    assert post(fake_anthropic.url, to_messages_request(chat, model="m")).status_code == 200
    assert "tools" not in fake_anthropic.requests[0].body


def test_the_tool_round_trip_continues_the_conversation(fake_anthropic):
    """A streamed tool-call answer, accumulated, goes back as the next request's history and the API takes it."""
    fake_anthropic.script(Answer(tool_message(tool_use("get_weather", {"city": "Paris"}), tool_use("get_time", {}))),
                          Answer(text_message("18C at noon.")))
    chat = {"model": "a", "messages": [{"role": "user", "content": "Weather and time?"}], "tools": [WEATHER, TIME]}
    first = streamed_completion(fake_anthropic.url, to_messages_request(chat | {"stream": True}, model="m"),
                                chat["tools"])
    reply = first["choices"][0]["message"]
    history = chat["messages"] + [
        {"role": "assistant", "content": reply["content"], "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["function"]["name"],
                                                             "arguments": c["function"]["arguments"]}}
            for c in reply["tool_calls"]]},
        *({"role": "tool", "tool_call_id": c["id"], "content": "18C"} for c in reply["tool_calls"])]
    second = post(fake_anthropic.url, to_messages_request(chat | {"messages": history}, model="m"))
    assert second.status_code == 200, second.text
    assert from_message(second.json(), model=MODEL)["choices"][0]["message"]["content"] == "18C at noon."


@pytest.mark.parametrize("failure", [Fail.rate_limited(3), Fail.overloaded(), Fail.server_error()])
def test_upstream_errors_read_back(fake_anthropic, failure):
    fake_anthropic.script(failure)
    answer = post(fake_anthropic.url, to_messages_request(RICH_CHAT, model="m"))
    assert answer.status_code == failure.status
    assert error_from(answer.status_code, answer.content) == (failure.type, failure.message)


def test_a_wrong_key_reads_back_without_the_key(fake_anthropic):
    answer = httpx.post(f"{fake_anthropic.url}/v1/messages", json=to_messages_request(RICH_CHAT, model="m"),
                        headers={**HEADERS, "x-api-key": "sk-ant-canary-wrong-key-0123456"})
    kind, text = error_from(answer.status_code, answer.content)
    assert (answer.status_code, kind) == (401, "authentication_error") and "canary" not in text


def test_an_error_event_mid_stream_raises_after_the_delivered_chunks(fake_anthropic):
    fake_anthropic.script(StreamError(text_message("A partial answer that breaks"), after=5))
    translator, delivered = StreamTranslator(model=MODEL), []
    with pytest.raises(UpstreamStreamError) as caught:
        for event, data in sse_events(fake_anthropic.url, to_messages_request(RICH_CHAT | {"stream": True}, model="m")):
            delivered += translator.feed(event, data)
    assert caught.value.type == "overloaded_error" and not translator.finished
    assert "".join(d["choices"][0]["delta"].get("content", "") for d in delivered) == "A partial "
    assert translator.usage["prompt_tokens"] == 21  # what message_start reported: enough to bill the delivered part


def test_a_stream_cut_without_message_stop_is_visible(fake_anthropic):
    fake_anthropic.script(Cut(text_message("never finished"), after=6))
    translator = StreamTranslator(model=MODEL)
    for event, data in sse_events(fake_anthropic.url, to_messages_request(RICH_CHAT | {"stream": True}, model="m")):
        translator.feed(event, data)
    assert not translator.finished  # the caller must turn this into an error event, not a clean end


def test_an_abrupt_cut_surfaces_as_a_transport_error(fake_anthropic):
    fake_anthropic.script(Cut(text_message("never finished"), after=6, abrupt=True))
    translator = StreamTranslator(model=MODEL)
    with pytest.raises(httpx.HTTPError):
        for event, data in sse_events(fake_anthropic.url, to_messages_request(RICH_CHAT | {"stream": True}, model="m")):
            translator.feed(event, data)
    assert not translator.finished
