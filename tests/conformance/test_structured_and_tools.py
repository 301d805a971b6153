"""Structured output and tool calls through the official SDK against the real model: every answer parses and
validates, calls come back in OpenAI's tool_calls shape (whole and streamed), and each bill equals the usage told."""
from __future__ import annotations

import json

import jsonschema
import pytest
from openai import OpenAI
from pydantic import BaseModel

from tests.conformance.test_openai_sdk import MODEL, billed
from tests.gateway.support import make_tenant

pytestmark = pytest.mark.model

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 40},
                                                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                   "required": ["city"], "additionalProperties": False}}}
ADD = {"type": "function", "function": {
    "name": "add", "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                   "required": ["a", "b"], "additionalProperties": False}}}


@pytest.fixture(scope="module")
def tenant(real_gateway):
    server, settings = real_gateway
    tenant_id, key = make_tenant(settings.resolved_database_url, cache_enabled=False)
    client = OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)
    return tenant_id, client, settings.resolved_database_url


def _bill_matches(url, tenant_id, raw, usage):
    row = billed(url, tenant_id, raw.headers["x-request-id"])
    assert (row.prompt_tokens, row.completion_tokens) == (usage.prompt_tokens, usage.completion_tokens)


SCHEMAS = [
    {"type": "object", "properties": {"colour": {"type": "string", "maxLength": 20}}, "required": ["colour"],
     "additionalProperties": False},
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                      "age": {"type": "integer", "minimum": 0, "maximum": 150},
                                      "tags": {"type": "array", "items": {"type": "string", "maxLength": 10},
                                               "maxItems": 3}},
     "required": ["name", "age", "tags"], "additionalProperties": False},
    {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}, "sure": {"type": "boolean"}},
     "required": ["answer", "sure"], "additionalProperties": False},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=["colour", "person", "yes-no"])
def test_json_schema_answers_parse_and_validate_and_are_billed(tenant, schema):
    tenant_id, client, url = tenant
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "Describe a person and a colour as JSON."}],
        max_tokens=80, temperature=0.8, seed=7, n=2,
        response_format={"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}})
    r = raw.parse()
    for choice in r.choices:
        assert choice.finish_reason == "stop", choice.message.content
        jsonschema.validate(json.loads(choice.message.content), schema)
    _bill_matches(url, tenant_id, raw, r.usage)


def test_json_object_and_the_sdk_parse_helper(tenant):
    _, client, _ = tenant
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "A JSON object, please."}],
                                       max_tokens=60, temperature=0, response_format={"type": "json_object"})
    assert isinstance(json.loads(r.choices[0].message.content), dict)

    class Colour(BaseModel):
        name: str
        red: int

    parsed = client.chat.completions.parse(model=MODEL, messages=[{"role": "user", "content": "Name a colour."}],
                                           max_tokens=60, temperature=0, response_format=Colour)
    assert isinstance(parsed.choices[0].message.parsed, Colour)


def test_vllm_structured_outputs_choice_and_regex(tenant):
    _, client, _ = tenant
    ask = [{"role": "user", "content": "Is the sky blue?"}]
    r = client.chat.completions.create(model=MODEL, messages=ask, max_tokens=5, temperature=0,
                                       extra_body={"structured_outputs": {"choice": ["yes", "no"]}})
    assert r.choices[0].message.content in ("yes", "no")
    r = client.completions.create(model=MODEL, prompt="The year is", max_tokens=8, temperature=0,
                                  extra_body={"structured_outputs": {"regex": " [12][0-9]{3}"}})
    text = r.choices[0].text
    assert len(text) == 5 and text[1:].isdigit()


def test_a_schema_that_does_not_compile_is_a_400_naming_response_format(tenant):
    _, client, _ = tenant
    import openai

    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=5,
                                       response_format={"type": "json_schema", "json_schema": {
                                           "name": "x", "schema": {"type": "object", "properties": {
                                               "a": {"$ref": "#/nowhere"}}, "required": ["a"]}}})
    assert e.value.body["param"] == "response_format"


def test_a_forced_function_call_is_valid_and_billed(tenant):
    tenant_id, client, url = tenant
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "What is the weather in Paris?"}], max_tokens=60,
        temperature=0, tools=[WEATHER, ADD], tool_choice={"type": "function", "function": {"name": "get_weather"}})
    r = raw.parse()
    choice = r.choices[0]
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "get_weather" and call.id.startswith("call_")
    jsonschema.validate(json.loads(call.function.arguments), WEATHER["function"]["parameters"])
    assert choice.finish_reason == "tool_calls" and not choice.message.content
    _bill_matches(url, tenant_id, raw, r.usage)


def test_required_tool_call_streamed_as_deltas_equals_the_whole(tenant):
    tenant_id, client, url = tenant
    ask = dict(model=MODEL, messages=[{"role": "user", "content": "What is 3 plus 4?"}], max_tokens=60,
               temperature=0, tools=[WEATHER, ADD], tool_choice="required")
    whole = client.chat.completions.create(**ask).choices[0].message.tool_calls
    raw = client.chat.completions.with_raw_response.create(**ask, stream=True,
                                                           stream_options={"include_usage": True})
    chunks = list(raw.parse())
    deltas = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert [(d.index, d.function.name, json.loads(d.function.arguments)) for d in deltas] == [
        (0, c.function.name, json.loads(c.function.arguments)) for c in whole]
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["tool_calls"]
    assert not "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    _bill_matches(url, tenant_id, raw, chunks[-1].usage)


def test_a_tool_result_round_trip_reaches_an_answer(tenant):
    _, client, _ = tenant
    first = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "What is 3 plus 4?"}], max_tokens=60, temperature=0,
        tools=[ADD], tool_choice="required").choices[0].message
    follow = client.chat.completions.create(
        model=MODEL, max_tokens=20, temperature=0, tools=[ADD], tool_choice="none",
        messages=[{"role": "user", "content": "What is 3 plus 4?"}, first.model_dump(exclude_none=True),
                  {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "7"}])
    assert follow.choices[0].message.content and follow.choices[0].message.tool_calls is None


def test_auto_leaves_plain_answers_plain(tenant):
    _, client, _ = tenant
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Say hello."}],
                                       max_tokens=12, temperature=0, tools=[WEATHER], tool_choice="none")
    assert r.choices[0].message.content and r.choices[0].message.tool_calls is None
    assert r.choices[0].finish_reason in ("stop", "length")
