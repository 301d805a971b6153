"""Anthropic stream events -> OpenAI chunks (pure: the fake's exact event sequences fed one by one)."""
from __future__ import annotations

import pytest
from openai.types.chat import ChatCompletionChunk

from gateway.upstreams.anthropic_wire import StreamTranslator, UpstreamStreamError
from tests.gateway.upstreams.fake_anthropic import (message, stream_events, text_message, tool_message,
                                                    tool_use)

MODEL = "claude-alias"


def translate(events, **kw) -> tuple[list[dict], StreamTranslator]:
    translator = StreamTranslator(model=MODEL, **kw)
    chunks = [chunk for event, data in events for chunk in translator.feed(event, data)]
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk)  # every chunk is a valid OpenAI chunk
    return chunks, translator


def deltas(chunks: list[dict]) -> list[dict]:
    return [c["choices"][0]["delta"] for c in chunks if c["choices"]]


def test_a_text_stream():
    answer = text_message("Hello there, friend.", input_tokens=11, output_tokens=5, model="claude-upstream-id")
    chunks, translator = translate(stream_events(answer, piece=6))
    assert deltas(chunks) == [{"role": "assistant", "content": ""}, {"content": "Hello "}, {"content": "there,"},
                              {"content": " frien"}, {"content": "d."}, {}]
    assert [c["choices"][0]["finish_reason"] for c in chunks[:-1]] == [None] * 5 + ["stop"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == {
        "prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16, "prompt_tokens_details": {"cached_tokens": 0}}
    assert {c["model"] for c in chunks} == {MODEL} and {c["id"] for c in chunks} == {f"chatcmpl-{answer['id']}"}
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"} and len({c["created"] for c in chunks}) == 1
    assert all(c["usage"] is None for c in chunks[:-1])
    assert translator.finished


def test_parallel_tool_calls_are_indexed_by_tool_call_not_content_block():
    answer = tool_message(tool_use("get_weather", {"city": "Paris"}, id="toolu_a"),
                          tool_use("get_weather", {"city": "Oslo"}, id="toolu_b"), text="Both.")
    chunks, _ = translate(stream_events(answer, piece=8))
    calls = [d["tool_calls"][0] for d in deltas(chunks) if "tool_calls" in d]
    assert calls[0] == {"index": 0, "id": "toolu_a", "type": "function",
                        "function": {"name": "get_weather", "arguments": ""}}
    assert "".join(c["function"]["arguments"] for c in calls if c["index"] == 0) == '{"city": "Paris"}'
    first_b = next(c for c in calls if c["index"] == 1)
    assert first_b == {"index": 1, "id": "toolu_b", "type": "function",
                       "function": {"name": "get_weather", "arguments": ""}}
    assert "".join(c["function"]["arguments"] for c in calls if c["index"] == 1) == '{"city": "Oslo"}'
    assert all(set(c) == {"index", "function"} for c in calls if "id" not in c)  # fragments: index, never empty
    assert all(c["function"]["arguments"] for c in calls if "id" not in c)
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"


def test_a_tool_call_without_arguments_streams_an_empty_object():
    chunks, _ = translate(stream_events(tool_message(tool_use("get_time", {}, id="toolu_t"))))
    calls = [d["tool_calls"][0] for d in deltas(chunks) if "tool_calls" in d]
    assert "".join(c["function"]["arguments"] for c in calls) == "{}"


def test_max_tokens_during_a_tool_call_finishes_with_length():
    answer = tool_message(tool_use("get_weather", {}, partial_json='{"city": "Pa'), stop_reason="max_tokens")
    chunks, _ = translate(stream_events(answer, piece=4))
    calls = [d["tool_calls"][0] for d in deltas(chunks) if "tool_calls" in d]
    assert "".join(c["function"]["arguments"] for c in calls) == '{"city": "Pa'
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "length"


@pytest.mark.parametrize("stop_reason, finish", [
    ("end_turn", "stop"), ("max_tokens", "length"), ("stop_sequence", "stop"), ("tool_use", "tool_calls"),
    ("refusal", "content_filter"), ("pause_turn", "stop")])
def test_the_stop_reason_table_streamed(stop_reason, finish):
    chunks, _ = translate(stream_events(text_message("x", stop_reason=stop_reason)))
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == finish


def test_cumulative_usage_is_taken_last_never_summed():
    answer = text_message("abc", input_tokens=40, output_tokens=17, cache_read=8)
    for full in (False, True):  # message_delta with only output_tokens, or repeating every count
        chunks, translator = translate(stream_events(answer, full_delta_usage=full))
        assert chunks[-1]["usage"] == {"prompt_tokens": 48, "completion_tokens": 17, "total_tokens": 65,
                                       "prompt_tokens_details": {"cached_tokens": 8}}
        assert translator.usage == chunks[-1]["usage"]


def test_several_message_deltas_keep_the_last_count():
    events = stream_events(text_message("abc", input_tokens=9, output_tokens=30))
    delta = next(d for e, d in events if e == "message_delta")
    early = {"type": "message_delta", "delta": {"stop_reason": None, "stop_sequence": None},
             "usage": {"output_tokens": 12}}
    events.insert(events.index(("message_delta", delta)), ("message_delta", early))
    chunks, _ = translate(events)
    assert chunks[-1]["usage"]["completion_tokens"] == 30
    assert sum(1 for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]) == 1


def test_input_tokens_are_not_read_as_zero_from_message_delta():
    events = stream_events(text_message("abc", input_tokens=25, output_tokens=3))
    for event, data in events:
        if event == "message_delta":
            data["usage"] = {"input_tokens": 0, "output_tokens": 3, "cache_read_input_tokens": None}
    chunks, _ = translate(events)
    assert chunks[-1]["usage"]["prompt_tokens"] == 25


def test_without_include_usage_no_usage_chunk():
    chunks, translator = translate(stream_events(text_message("abc")), include_usage=False)
    assert all(c["choices"] for c in chunks) and all("usage" not in c for c in chunks)
    assert translator.finished and translator.usage["completion_tokens"] == 9


def test_thinking_and_pings_yield_nothing():
    answer = message([{"type": "thinking", "thinking": "let me think", "signature": "sig"},
                      {"type": "text", "text": "42"}])
    chunks, _ = translate(stream_events(answer))
    assert deltas(chunks)[:3] == [{"role": "assistant", "content": ""}, {"content": "42"}, {}]
    assert translate([("ping", {"type": "ping"})])[0] == []
    assert translate([("some_future_event", {"type": "some_future_event"})])[0] == []


def test_a_cut_stream_is_not_finished():
    events = stream_events(text_message("never finished"))[:5]
    chunks, translator = translate(events)
    assert not translator.finished
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks)


def test_an_error_event_raises_with_type_and_message():
    translator = StreamTranslator(model=MODEL)
    for event, data in stream_events(text_message("partial"))[:4]:
        translator.feed(event, data)
    with pytest.raises(UpstreamStreamError) as caught:
        translator.feed("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    assert (caught.value.type, caught.value.message) == ("overloaded_error", "Overloaded")
    assert not translator.finished


def test_an_error_event_never_carries_a_key():
    with pytest.raises(UpstreamStreamError) as caught:
        StreamTranslator(model=MODEL).feed("error", {"type": "error", "error": {
            "type": "api_error", "message": "boom with x-api-key: sk-ant-canary0123456789"}})
    assert "canary" not in str(caught.value) and "canary" not in caught.value.message


def test_events_without_a_name_are_known_by_their_type():
    named, _ = translate(stream_events(text_message("same")))
    unnamed, _ = translate([("message", data) for _, data in stream_events(text_message("same"))])
    assert [c["choices"] for c in unnamed] == [c["choices"] for c in named]
