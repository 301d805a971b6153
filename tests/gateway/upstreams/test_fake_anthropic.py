"""The official `anthropic` SDK against the fake Messages server: proof that the fake speaks the protocol."""
from __future__ import annotations

import time

import anthropic
import httpx
import pytest

from tests.gateway.upstreams.fake_anthropic import (API_KEY, Answer, Cut, Fail, PingsOnly, Silent, StreamError,
                                                    text_message, tool_message, tool_use)

WEATHER = {"name": "get_weather", "description": "Weather in a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
ASK = {"model": "claude-fake-1", "max_tokens": 100, "messages": [{"role": "user", "content": "Hi"}]}


@pytest.fixture
def client(fake_anthropic):
    with anthropic.Anthropic(api_key=API_KEY, base_url=fake_anthropic.url, max_retries=0, timeout=10) as c:
        yield c


def test_plain_message(client, fake_anthropic):
    scripted = text_message("Hello there!", input_tokens=12, output_tokens=4)
    fake_anthropic.script(Answer(scripted))
    answer = client.messages.create(**ASK, system="Be brief.", stop_sequences=["END"],
                                    extra_body={"temperature": 0.5})  # SDK 2.x takes sampling knobs as extras
    assert answer.id == scripted["id"]
    assert (answer.content[0].text, answer.stop_reason, answer.usage.input_tokens, answer.usage.output_tokens) == (
        "Hello there!", "end_turn", 12, 4)
    seen = fake_anthropic.requests[0]
    assert API_KEY in (seen.headers.get("x-api-key"), seen.headers.get("authorization", "")[7:])
    assert seen.headers["anthropic-version"]
    assert seen.body["system"] == "Be brief." and seen.body["stop_sequences"] == ["END"]


def test_stream_accumulates_to_the_plain_message(client, fake_anthropic):
    scripted = text_message("A longer answer, streamed in pieces.", input_tokens=30, output_tokens=9)
    fake_anthropic.script(Answer(scripted), Answer(scripted))
    plain = client.messages.create(**ASK)
    with client.messages.stream(**ASK) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "A longer answer, streamed in pieces."
    assert final.model_dump() == plain.model_dump()
    assert final.usage.output_tokens == 9 and final.usage.input_tokens == 30  # cumulative, not 1 + 9


def test_parallel_tool_use_plain_and_streamed(client, fake_anthropic):
    scripted = tool_message(tool_use("get_weather", {"city": "Paris"}), tool_use("get_weather", {"city": "Oslo"}),
                            text="Checking both.")
    fake_anthropic.script(Answer(scripted), Answer(scripted))
    plain = client.messages.create(**ASK, tools=[WEATHER])
    with client.messages.stream(**ASK, tools=[WEATHER]) as stream:
        final = stream.get_final_message()
    assert final.model_dump() == plain.model_dump()
    assert plain.stop_reason == "tool_use"
    assert [(b.name, b.input) for b in plain.content if b.type == "tool_use"] == [
        ("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})]
    # the tool results go back as the next user turn, which the fake accepts
    fake_anthropic.script(Answer(text_message("Paris 18C, Oslo 4C.")))
    results = [{"type": "tool_result", "tool_use_id": b.id, "content": "18C"} for b in plain.content
               if b.type == "tool_use"]
    follow = client.messages.create(**ASK | {"messages": [ASK["messages"][0],
                                                          {"role": "assistant", "content": plain.content},
                                                          {"role": "user", "content": results}]}, tools=[WEATHER])
    assert follow.content[0].text == "Paris 18C, Oslo 4C."


@pytest.mark.parametrize("failure, error", [
    (Fail.rate_limited(retry_after=7), anthropic.RateLimitError),
    (Fail.overloaded(), anthropic.OverloadedError),
    (Fail.server_error(), anthropic.InternalServerError)])
def test_errors_in_anthropics_shape(client, fake_anthropic, failure, error):
    fake_anthropic.script(failure)
    with pytest.raises(error) as caught:
        client.messages.create(**ASK)
    assert caught.value.status_code == failure.status
    assert caught.value.body["error"]["type"] == failure.type
    if failure.status == 429:
        assert caught.value.response.headers["retry-after"] == "7"


def test_a_wrong_key_is_refused_with_401(fake_anthropic):
    with (anthropic.Anthropic(api_key="sk-ant-wrong", base_url=fake_anthropic.url, max_retries=0) as c,
          pytest.raises(anthropic.AuthenticationError) as caught):
        c.messages.create(**ASK)
    assert caught.value.body["error"] == {"type": "authentication_error", "message": "invalid x-api-key"}


def test_a_missing_version_header_is_refused(fake_anthropic):
    answer = httpx.post(f"{fake_anthropic.url}/v1/messages", json=ASK, headers={"x-api-key": API_KEY})
    assert answer.status_code == 400
    assert answer.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize("change, says", [
    ({"max_tokens": 0}, "max_tokens"),
    ({"messages": [{"role": "assistant", "content": "Hi"}]}, "user"),
    ({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}, "alternate"),
    ({"tools": []}, "tools"),
    ({"n": 2}, "n: Extra inputs"),
    ({"temperature": 1.5}, "temperature"),
    ({"max_tokens": "many"}, "max_tokens"),
    ({"tool_choice": {"type": "auto"}}, "tool_choice"),
    ({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}]},
        {"role": "user", "content": "no result"}]}, "tool_result")])
def test_bad_requests_get_400_invalid_request_error(client, fake_anthropic, change, says):
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(**ASK, extra_body=change)  # extra_body overrides the typed arguments
    error = caught.value.body["error"]
    assert error["type"] == "invalid_request_error" and says in error["message"]


def test_a_request_without_max_tokens_is_refused(fake_anthropic):
    body = {k: v for k, v in ASK.items() if k != "max_tokens"}
    answer = httpx.post(f"{fake_anthropic.url}/v1/messages", json=body,
                        headers={"x-api-key": API_KEY, "anthropic-version": "2023-06-01"})
    assert answer.status_code == 400
    assert answer.json()["error"] == {"type": "invalid_request_error", "message": "max_tokens: Field required"}


def test_an_error_event_mid_stream_reaches_the_sdk(client, fake_anthropic):
    fake_anthropic.script(StreamError(text_message("Partial answer"), after=4))
    with pytest.raises(anthropic.APIStatusError) as caught, client.messages.stream(**ASK) as stream:
        for _ in stream:
            pass
    assert "Overloaded" in str(caught.value)


def test_a_cut_stream_ends_without_message_stop(fake_anthropic):
    fake_anthropic.script(Cut(text_message("never finished"), after=4))
    with httpx.stream("POST", f"{fake_anthropic.url}/v1/messages", json=ASK | {"stream": True},
                      headers={"x-api-key": API_KEY, "anthropic-version": "2023-06-01"}) as answer:
        events = [line for line in answer.iter_lines() if line.startswith("event:")]
    assert events and "event: message_stop" not in events and "event: message_delta" not in events


def stream_body() -> dict:
    return ASK | {"stream": True}


STREAM_HEADERS = {"x-api-key": API_KEY, "anthropic-version": "2023-06-01"}


def test_a_silent_server_accepts_and_never_answers(fake_anthropic):
    fake_anthropic.script(Silent())
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{fake_anthropic.url}/v1/messages", json=ASK, headers=STREAM_HEADERS,
                   timeout=httpx.Timeout(5, read=0.3))
    assert 0.25 < time.monotonic() - started < 3


def test_a_silent_stream_sends_its_headers_and_then_nothing(fake_anthropic):
    fake_anthropic.script(Silent(headers=True))
    with httpx.stream("POST", f"{fake_anthropic.url}/v1/messages", json=stream_body(), headers=STREAM_HEADERS,
                      timeout=httpx.Timeout(5, read=0.3)) as answer:
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
        with pytest.raises(httpx.ReadTimeout):
            next(answer.iter_lines())


def test_pings_only_keep_a_per_read_timeout_from_firing(fake_anthropic):
    """What an idle timer must not be fooled by: bytes keep coming, none of them an answer."""
    fake_anthropic.script(PingsOnly(text_message("never"), interval_s=0.05))
    events = []
    with httpx.stream("POST", f"{fake_anthropic.url}/v1/messages", json=stream_body(), headers=STREAM_HEADERS,
                      timeout=httpx.Timeout(5, read=0.3)) as answer:
        deadline = time.monotonic() + 0.6
        for line in answer.iter_lines():
            if line.startswith("event:"):
                events.append(line[7:])
            if time.monotonic() > deadline:
                break
    assert events[0] == "message_start" and len(events) > 5 and set(events[1:]) == {"ping"}


def test_answers_can_wait_before_the_first_byte_and_between_events(fake_anthropic):
    fake_anthropic.script(Answer(text_message("ab"), first_byte_s=0.3, delay_s=0.05))
    started = time.monotonic()
    with httpx.stream("POST", f"{fake_anthropic.url}/v1/messages", json=stream_body(), headers=STREAM_HEADERS,
                      timeout=5) as answer:
        first = time.monotonic() - started
        lines = [line for line in answer.iter_lines() if line.startswith("event:")]
    assert first >= 0.3 and time.monotonic() - started >= 0.3 + 0.05 * (len(lines) - 1)
    assert lines[0] == "event: message_start" and lines[-1] == "event: message_stop"


def test_the_exact_event_order(fake_anthropic):
    fake_anthropic.script(Answer(tool_message(tool_use("get_weather", {"city": "Paris"}), text="Hm.")))
    with httpx.stream("POST", f"{fake_anthropic.url}/v1/messages", json=stream_body() | {"tools": [WEATHER]},
                      headers=STREAM_HEADERS, timeout=5) as answer:
        events = [line[7:] for line in answer.iter_lines() if line.startswith("event:")]
    text_deltas, json_deltas = events[3:4], events[6:-3]
    assert events[:3] == ["message_start", "content_block_start", "ping"]
    assert text_deltas == ["content_block_delta"] and events[4:6] == ["content_block_stop", "content_block_start"]
    assert set(json_deltas) == {"content_block_delta"}
    assert events[-3:] == ["content_block_stop", "message_delta", "message_stop"]


def test_a_reply_can_depend_on_the_request(fake_anthropic):
    fake_anthropic.default = lambda body: Answer(text_message(f"echo: {body['messages'][-1]['content']}"))
    with anthropic.Anthropic(api_key=API_KEY, base_url=fake_anthropic.url, max_retries=0) as c:
        assert c.messages.create(**ASK).content[0].text == "echo: Hi"
