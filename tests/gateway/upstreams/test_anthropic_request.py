"""OpenAI chat requests -> Anthropic Messages requests (golden bodies)."""
from __future__ import annotations

import pytest

from gateway.upstreams.anthropic_wire import DEFAULT_MAX_TOKENS, to_messages_request

MODEL = "claude-test-1"
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}


def convert(**chat) -> dict:
    chat.setdefault("messages", [{"role": "user", "content": "Hi"}])
    return to_messages_request({"model": "alias", **chat}, model=MODEL)


def test_plain_chat_gets_the_upstream_model_and_a_default_max_tokens():
    assert convert() == {"model": MODEL, "max_tokens": DEFAULT_MAX_TOKENS,
                         "messages": [{"role": "user", "content": "Hi"}]}


def test_system_and_developer_messages_join_into_the_top_level_system():
    body = convert(messages=[{"role": "system", "content": "Be brief."},
                             {"role": "developer", "content": [{"type": "text", "text": "Answer in French."}]},
                             {"role": "user", "content": "Hi"}])
    assert body["system"] == "Be brief.\n\nAnswer in French."
    assert body["messages"] == [{"role": "user", "content": "Hi"}]


def test_consecutive_turns_of_one_role_merge_so_roles_alternate():
    body = convert(messages=[{"role": "user", "content": "one"}, {"role": "user", "content": "two"},
                             {"role": "assistant", "content": "three"}, {"role": "assistant", "content": "four"},
                             {"role": "user", "content": "five"}])
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "three"}, {"type": "text", "text": "four"}]},
        {"role": "user", "content": "five"}]


def test_a_chat_opening_with_the_assistant_gets_a_user_turn_first():
    body = convert(messages=[{"role": "system", "content": "s"},
                             {"role": "assistant", "content": "Hello! How can I help?"},
                             {"role": "user", "content": "Weather?"}])
    assert [t["role"] for t in body["messages"]] == ["user", "assistant", "user"]


def test_parallel_tool_calls_and_their_results_round_trip_as_blocks():
    body = convert(messages=[
        {"role": "user", "content": "Weather in Paris and the time?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "toolu_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "toolu_2", "type": "function", "function": {"name": "get_time", "arguments": ""}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "18C"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": [{"type": "text", "text": "12:00"}]},
        {"role": "user", "content": "Thanks"}], tools=[WEATHER, TIME])
    assert body["messages"] == [
        {"role": "user", "content": "Weather in Paris and the time?"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"},
                                     {"type": "tool_result", "tool_use_id": "toolu_2", "content": "12:00"},
                                     {"type": "text", "text": "Thanks"}]}]
    assert body["tools"] == [
        {"name": "get_weather", "description": "Weather in a city", "input_schema": WEATHER["function"]["parameters"]},
        {"name": "get_time", "input_schema": {"type": "object", "properties": {}}}]
    assert "tool_choice" not in body


def test_assistant_text_beside_tool_calls_comes_first():
    body = convert(messages=[{"role": "user", "content": "q"},
                             {"role": "assistant", "content": "Let me check.", "tool_calls": [
                                 {"id": "t1", "type": "function",
                                  "function": {"name": "get_time", "arguments": "{}"}}]},
                             {"role": "tool", "tool_call_id": "t1", "content": "noon"}], tools=[TIME])
    assert body["messages"][1]["content"] == [{"type": "text", "text": "Let me check."},
                                              {"type": "tool_use", "id": "t1", "name": "get_time", "input": {}}]
    assert body["messages"][2]["content"] == [{"type": "tool_result", "tool_use_id": "t1", "content": "noon"}]


@pytest.mark.parametrize("tools", [[], None])
def test_an_empty_tool_list_sends_no_tools(tools):
    body = convert(tools=tools, tool_choice="none")
    assert "tools" not in body and "tool_choice" not in body


def test_tool_choice_needs_tools():
    with pytest.raises(ValueError, match=r"^tool_choice"):
        convert(tools=[], tool_choice="required")


@pytest.mark.parametrize("choice, expected", [
    ("auto", {"type": "auto"}), ("none", {"type": "none"}), ("required", {"type": "any"}),
    ({"type": "function", "function": {"name": "get_time"}}, {"type": "tool", "name": "get_time"})])
def test_tool_choice_table(choice, expected):
    assert convert(tools=[WEATHER, TIME], tool_choice=choice)["tool_choice"] == expected


def test_parallel_tool_calls_false_disables_parallel_tool_use():
    assert convert(tools=[TIME], parallel_tool_calls=False)["tool_choice"] == {
        "type": "auto", "disable_parallel_tool_use": True}
    assert convert(tools=[TIME], tool_choice="required", parallel_tool_calls=False)["tool_choice"] == {
        "type": "any", "disable_parallel_tool_use": True}
    assert convert(tools=[TIME], tool_choice="none", parallel_tool_calls=False)["tool_choice"] == {"type": "none"}


def test_a_tool_choice_naming_an_unknown_function_is_refused():
    with pytest.raises(ValueError, match=r"^tool_choice"):
        convert(tools=[TIME], tool_choice={"type": "function", "function": {"name": "nope"}})


def test_images_become_base64_or_url_sources():
    body = convert(messages=[{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg", "detail": "low"}}]}])
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}]


@pytest.mark.parametrize("url", ["data:image/bmp;base64,AAAA", "ftp://example.com/x.png", "data:image/png,raw"])
def test_images_messages_cannot_take_are_refused(url):
    with pytest.raises(ValueError, match=r"^messages\[0\]\.content\[0\]\.image_url"):
        convert(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}])


def test_sampling_fields():
    body = convert(max_tokens=50, stop="END", temperature=1.7, top_p=0.9, user="u-42", stream=True,
                   stream_options={"include_usage": True}, seed=7)
    assert body == {"model": MODEL, "max_tokens": 50, "messages": [{"role": "user", "content": "Hi"}],
                    "stop_sequences": ["END"], "temperature": 1.0, "top_p": 0.9,
                    "metadata": {"user_id": "u-42"}, "stream": True}


def test_max_completion_tokens_wins_and_stop_lists_pass():
    body = convert(max_tokens=50, max_completion_tokens=20, stop=["a", "b"], temperature=0.3)
    assert (body["max_tokens"], body["stop_sequences"], body["temperature"]) == (20, ["a", "b"], 0.3)


@pytest.mark.parametrize("field, value", [
    ("n", 2), ("logprobs", True), ("top_logprobs", 3), ("logit_bias", {"50256": -100}),
    ("frequency_penalty", 0.5), ("presence_penalty", -1), ("response_format", {"type": "json_object"}),
    ("functions", [{"name": "f"}]), ("audio", {"voice": "x"}), ("modalities", ["text", "audio"])])
def test_what_messages_cannot_express_is_refused_by_name(field, value):
    with pytest.raises(ValueError, match=f"^{field}:"):
        convert(**{field: value})


def test_no_op_values_of_unsupported_fields_pass():
    assert convert(n=1, logprobs=False, frequency_penalty=0, response_format={"type": "text"})["max_tokens"]


@pytest.mark.parametrize("messages, field", [
    ([], "messages"), ([{"role": "system", "content": "only"}], "messages"),
    ([{"role": "function", "name": "f", "content": "x"}], r"messages\[0\]\.role"),
    ([{"role": "tool", "content": "x"}], r"messages\[0\]\.tool_call_id"),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [
        {"id": "t", "type": "function", "function": {"name": "f", "arguments": "{oops"}}]}],
     r"messages\[1\]\.tool_calls\[0\]\.function\.arguments"),
    ([{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}], r"messages\[0\]\.content\[0\]")])
def test_bad_messages_are_refused_by_name(messages, field):
    with pytest.raises(ValueError, match=f"^{field}"):
        convert(messages=messages)


def test_max_tokens_must_be_positive():
    with pytest.raises(ValueError, match=r"^max_tokens"):
        convert(max_tokens=0)


def test_a_final_assistant_prefill_loses_trailing_whitespace():
    body = convert(messages=[{"role": "user", "content": "Count"}, {"role": "assistant", "content": "1, 2, "}])
    assert body["messages"][-1] == {"role": "assistant", "content": "1, 2,"}


def test_a_tool_schema_without_a_type_is_an_object_schema():
    tool = {"type": "function", "function": {"name": "f", "parameters": {"properties": {"x": {"type": "integer"}}}}}
    assert convert(tools=[tool])["tools"] == [
        {"name": "f", "input_schema": {"type": "object", "properties": {"x": {"type": "integer"}}}}]


def test_unknown_and_gateway_only_fields_are_left_out():
    body = convert(stream_options={"include_usage": True}, priority=3, store=True, chat_template_kwargs={"x": 1})
    assert set(body) == {"model", "max_tokens", "messages"}
