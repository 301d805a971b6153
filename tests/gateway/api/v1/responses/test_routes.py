"""POST /v1/responses whole, GET and DELETE, over a canned backend: the Response object, continuation with
previous_response_id (per tenant), storage bounds, bad input, and one ledger row per response."""
from __future__ import annotations

import httpx
import pytest
from openai import OpenAI

from tests.gateway.api.v1.responses.conftest import MODEL, ConversationBackend, auth, create, serve
from tests.gateway.data_fixtures import assert_openai_error
from tests.gateway.support import CannedBackend, make_tenant, usage_rows


@pytest.fixture(scope="module")
def live(db):
    backend = ConversationBackend()
    with serve(db, backend, responses_max_stored_per_tenant=3, responses_max_input_bytes=400) as server:
        yield server, backend


@pytest.fixture
def tenant(db):
    return make_tenant(db[1])


def test_a_whole_response_in_the_sdk_shape_billed_as_told(db, live, tenant):
    server, _ = live
    tenant_id, key = tenant
    raw = create(server, key, input="Say hi.", instructions="Be brief.", max_output_tokens=20, temperature=0,
                 metadata={"k": "v"}, user="u1")
    assert raw.status_code == 200, raw.text
    body = raw.json()
    assert body["id"].startswith("resp_") and body["object"] == "response" and body["status"] == "completed"
    assert body["instructions"] == "Be brief." and body["metadata"] == {"k": "v"} and body["user"] == "u1"
    assert (body["max_output_tokens"], body["temperature"], body["store"]) == (20, 0, True)
    assert body["incomplete_details"] is None and body["error"] is None and body["tools"] == []
    (item,) = body["output"]
    assert item["type"] == "message" and item["id"].startswith("msg_") and item["role"] == "assistant"
    assert item["status"] == "completed"
    assert item["content"] == [{"type": "output_text", "text": "a" * 8, "annotations": [], "logprobs": []}]
    usage = body["usage"]
    assert usage["input_tokens"] == 3 + 3  # the instructions (a system message) and the input: words + role
    assert usage["output_tokens"] == 8 and usage["total_tokens"] == 14
    assert usage["input_tokens_details"]["cached_tokens"] == 0
    assert usage["output_tokens_details"] == {"reasoning_tokens": 0}
    (row,) = usage_rows(db[1], tenant_id)
    assert row.request_id == raw.headers["x-request-id"] and row.endpoint == "/v1/responses"
    assert (row.prompt_tokens, row.completion_tokens, row.status) == (6, 8, "ok")


def test_the_sdk_reads_it_and_sees_the_text(live, tenant):
    server, _ = live
    client = OpenAI(base_url=f"{server.url}/v1", api_key=tenant[1], max_retries=0)
    r = client.responses.create(model=MODEL, input=[
        {"role": "developer", "content": "Terse."},
        {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}])
    assert r.output_text == "a" * 8 and r.status == "completed"
    assert client.responses.retrieve(r.id).output_text == r.output_text


def test_max_output_tokens_is_incomplete(db, live, tenant):
    server, _ = live
    body = create(server, tenant[1], input="hi", max_output_tokens=3).json()
    assert body["status"] == "incomplete" and body["incomplete_details"] == {"reason": "max_output_tokens"}
    assert body["output"][0]["status"] == "incomplete" and body["output"][0]["content"][0]["text"] == "aaa"
    assert body["usage"]["output_tokens"] == 3 == usage_rows(db[1], tenant[0])[0].completion_tokens


def test_previous_response_id_carries_the_conversation(db, live, tenant):
    server, backend = live
    tenant_id, key = tenant
    first = create(server, key, input="one two", instructions="Old rules.").json()
    second = create(server, key, input="three", previous_response_id=first["id"], instructions="New rules.").json()
    assert second["previous_response_id"] == first["id"]
    # The instructions are this response's only (OpenAI's rule); the first exchange comes before the input.
    assert backend.seen[-1] == [{"role": "system", "content": "New rules."},
                                {"role": "user", "content": "one two"},
                                {"role": "assistant", "content": "a" * 8},
                                {"role": "user", "content": "three"}]
    assert second["usage"]["input_tokens"] == 3 + 3 + 2 + 2
    third = create(server, key, input="four", previous_response_id=second["id"]).json()
    assert [m["content"] for m in backend.seen[-1]] == ["one two", "a" * 8, "three", "a" * 8, "four"]
    rows = usage_rows(db[1], tenant_id)
    assert [r.prompt_tokens for r in rows] == [first["usage"]["input_tokens"], second["usage"]["input_tokens"],
                                               third["usage"]["input_tokens"]]


def test_another_tenant_can_neither_continue_read_nor_delete_it(db, live, tenant):
    server, _ = live
    _, key = tenant
    other_id, other = make_tenant(db[1])
    rid = create(server, key, input="secret").json()["id"]
    assert_openai_error(create(server, other, input="x", previous_response_id=rid), 404,
                        param="previous_response_id", code="previous_response_not_found")
    assert_openai_error(httpx.get(f"{server.url}/v1/responses/{rid}", headers=auth(other)), 404)
    assert_openai_error(httpx.delete(f"{server.url}/v1/responses/{rid}", headers=auth(other)), 404)
    assert httpx.get(f"{server.url}/v1/responses/{rid}", headers=auth(key)).json()["id"] == rid
    assert usage_rows(db[1], other_id) == []  # a refused continuation is not billed


def test_retrieve_and_delete(live, tenant):
    server, _ = live
    _, key = tenant
    made = create(server, key, input="hi").json()
    url = f"{server.url}/v1/responses/{made['id']}"
    assert httpx.get(url, headers=auth(key)).json() == made  # as it was returned
    assert_openai_error(httpx.get(url, params={"stream": "true"}, headers=auth(key)), 400, param="stream")
    gone = httpx.delete(url, headers=auth(key))
    assert gone.status_code == 200 and gone.json() == {"id": made["id"], "object": "response.deleted", "deleted": True}
    assert_openai_error(httpx.get(url, headers=auth(key)), 404, code="not_found")
    assert_openai_error(httpx.delete(url, headers=auth(key)), 404)
    assert_openai_error(create(server, key, input="x", previous_response_id=made["id"]), 404,
                        param="previous_response_id")
    for odd in ("resp_x", "resp_" + "0" * 32, "resp_" + "A" * 32, "msg_" + "0" * 32):
        assert_openai_error(httpx.get(f"{server.url}/v1/responses/{odd}", headers=auth(key)), 404)
    assert httpx.get(url).status_code == 401


def test_store_false_keeps_nothing(live, tenant):
    server, _ = live
    made = create(server, tenant[1], input="hi", store=False).json()
    assert made["store"] is False and made["status"] == "completed"
    assert_openai_error(httpx.get(f"{server.url}/v1/responses/{made['id']}", headers=auth(tenant[1])), 404)


def test_a_tenant_keeps_its_newest_responses_only(live, tenant):
    server, _ = live  # responses_max_stored_per_tenant=3
    ids = [create(server, tenant[1], input=f"n{i}").json()["id"] for i in range(5)]
    found = [httpx.get(f"{server.url}/v1/responses/{i}", headers=auth(tenant[1])).status_code for i in ids]
    assert found == [404, 404, 200, 200, 200]


def test_the_conversation_is_bounded(db, live, tenant):
    server, _ = live  # responses_max_input_bytes=400
    tenant_id, key = tenant
    assert_openai_error(create(server, key, input="x" * 401), 400, param="input", code="input_too_large")
    made = create(server, key, input="y" * 380).json()
    # Fits alone; with the previous conversation and its output, it does not.
    assert_openai_error(create(server, key, input="z" * 20, previous_response_id=made["id"]), 400, param="input")
    assert len(usage_rows(db[1], tenant_id)) == 1


@pytest.mark.parametrize("body, param", [
    ({"input": []}, "input"),
    ({"input": 5}, "input"),
    ({}, "input"),
    ({"input": [{"role": "tool", "content": "x"}]}, "input[0].role"),
    ({"input": ["hi"]}, "input[0]"),
    ({"input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]}, "input[0].type"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "http://x"}]}]},
     "input[0].content[0].type"),
    ({"input": [{"role": "user", "content": [{"type": "input_text", "text": 3}]}]}, "input[0].content[0].text"),
    ({"input": "x", "tools": [{"type": "function", "name": "f", "parameters": {}}]}, "tools"),
    ({"input": "x", "tool_choice": "required"}, "tool_choice"),
    ({"input": "x", "reasoning": {"effort": "high"}}, "reasoning.effort"),
    ({"input": "x", "text": {"format": {"type": "json_schema", "name": "s", "schema": {}}}}, "text.format"),
    ({"input": "x", "truncation": "auto"}, "truncation"),
    ({"input": "x", "background": True}, "background"),
    ({"input": "x", "include": ["message.output_text.logprobs"]}, "include"),
    ({"input": "x", "top_logprobs": 3}, "top_logprobs"),
    ({"input": "x", "conversation": "conv_1"}, "conversation"),
    ({"input": "x", "prompt": {"id": "pmpt_1"}}, "prompt"),
    ({"input": "x", "max_output_tokens": 0}, "max_output_tokens"),
    ({"input": "x", "max_output_tokens": 10**6}, "max_output_tokens"),
    ({"input": "x", "temperature": 3}, "temperature"),
    ({"input": "x", "temperature": "0"}, "temperature"),
    ({"input": "x", "metadata": {f"k{i}": "v" for i in range(17)}}, "metadata"),
    ({"input": "x", "previous_response_id": "resp_nope"}, "previous_response_id"),
    ({"input": "x", "model": "gpt-17"}, "model"),
])
def test_bad_requests_are_400s_in_openai_shape_and_unbilled(db, live, tenant, body, param):
    server, _ = live
    r = httpx.post(f"{server.url}/v1/responses", json={"model": MODEL, **body}, headers=auth(tenant[1]))
    assert 400 <= r.status_code < 500
    assert_openai_error(r, r.status_code, param=param)
    assert usage_rows(db[1], tenant[0]) == []


def test_a_body_that_is_not_an_object(live, tenant):
    server, _ = live
    for raw in (b"", b"[]", b"{", b'"x"'):
        r = httpx.post(f"{server.url}/v1/responses", content=raw, headers={**auth(tenant[1]),
                                                                            "content-type": "application/json"})
        assert_openai_error(r, 400)


def test_neutral_values_and_unknown_fields_are_accepted(live, tenant):
    server, _ = live
    r = create(server, tenant[1], input="hi", tools=[], tool_choice="auto", text={"format": {"type": "text"}},
               reasoning={"effort": None, "summary": None}, truncation="disabled", background=False,
               include=["reasoning.encrypted_content"], parallel_tool_calls=False, service_tier="auto",
               prompt_cache_key="k", safety_identifier="s", stream_options={"include_obfuscation": False},
               chat_id="x", seed=3)
    assert r.status_code == 200, r.text
    assert r.headers["x-tollgate-ignored-fields"] == "chat_id,seed"
    assert r.json()["parallel_tool_calls"] is False and r.json()["prompt_cache_key"] == "k"


def test_assistant_output_items_sent_back_as_input(live, tenant):
    """A client that keeps its own history sends the output items back (with their ids and statuses)."""
    server, backend = live
    first = create(server, tenant[1], input="hi", store=False).json()
    r = create(server, tenant[1], input=[{"role": "user", "content": "hi"}, *first["output"],
                                         {"role": "user", "content": "again"}])
    assert r.status_code == 200, r.text
    assert backend.seen[-1] == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "a" * 8},
                                {"role": "user", "content": "again"}]


def test_failures_are_openai_errors_and_unbilled(db, tenant):
    tenant_id, key = tenant
    with serve(db, CannedBackend(fail_after=3)) as server:
        r = create(server, key, input="hi")
        assert_openai_error(r, 502, code="generation_failed")
    with serve(db, CannedBackend(first_delay_s=2.0), request_timeout_s=0.3) as server:
        assert_openai_error(create(server, key, input="hi"), 504, code="timeout")
    assert usage_rows(db[1], tenant_id) == []


def test_rate_limits_apply(db, live):
    server, _ = live
    _, key = make_tenant(db[1], rpm=1)
    assert create(server, key, input="hi").status_code == 200
    assert_openai_error(create(server, key, input="hi"), 429, code="rate_limit_exceeded")
