"""POST /v1/responses streamed, over a canned backend: the event sequence the SDK parses, usage and storage
before the last event, a failure or an exhausted budget mid-stream (response.failed), and a client that
leaves (aborted in the engine, billed what was made, not stored)."""
from __future__ import annotations

import httpx
import pytest
from openai import OpenAI

from tests.gateway.api.v1.responses.conftest import MODEL, auth, create, serve, stream
from tests.gateway.support import CannedBackend, make_tenant, usage_rows, wait_usage_rows

OPENING = ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]
CLOSING = ["response.output_text.done", "response.content_part.done", "response.output_item.done"]


@pytest.fixture(scope="module")
def live(db):
    with serve(db) as server:
        yield server


@pytest.fixture
def tenant(db):
    return make_tenant(db[1])


def test_the_event_sequence(db, live, tenant):
    tenant_id, key = tenant
    r, events = stream(live, key, input="Say hi.", instructions="Be brief.", metadata={"a": "b"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    types = [e["type"] for e in events]
    assert types == OPENING + ["response.output_text.delta"] * 8 + CLOSING + ["response.completed"]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    created, final = events[0]["response"], events[-1]["response"]
    assert created["status"] == "in_progress" and created["output"] == [] and created["usage"] is None
    assert final["id"] == created["id"] and final["status"] == "completed" and final["metadata"] == {"a": "b"}
    item_id = events[2]["item"]["id"]
    assert all(e["item_id"] == item_id for e in events if "item_id" in e)
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == events[-4]["text"] == final["output"][0]["content"][0]["text"] == "a" * 8
    assert events[-2]["item"] == final["output"][0]
    (row,) = usage_rows(db[1], tenant_id)  # durable before the last event went out
    assert (row.prompt_tokens, row.completion_tokens) == (final["usage"]["input_tokens"],
                                                          final["usage"]["output_tokens"])
    assert row.endpoint == "/v1/responses" and row.status == "ok"
    # Stored before the last event, as it was sent there.
    assert httpx.get(f"{live.url}/v1/responses/{final['id']}", headers=auth(key)).json() == final


def test_streamed_text_equals_the_whole_answer(live, tenant):
    _, key = tenant
    whole = create(live, key, input="hi", max_output_tokens=5).json()
    _, events = stream(live, key, input="hi", max_output_tokens=5)
    final = events[-1]["response"]
    assert final["output"][0]["content"] == whole["output"][0]["content"]
    assert final["usage"] == whole["usage"]


def test_max_output_tokens_ends_in_response_incomplete(live, tenant):
    _, events = stream(live, tenant[1], input="hi", max_output_tokens=3)
    assert events[-1]["type"] == "response.incomplete"
    final = events[-1]["response"]
    assert final["status"] == "incomplete" and final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["usage"]["output_tokens"] == 3 and events[-2]["item"]["status"] == "incomplete"


def test_the_sdk_stream_helper(live, tenant):
    client = OpenAI(base_url=f"{live.url}/v1", api_key=tenant[1], max_retries=0)
    with client.responses.stream(model=MODEL, input="hi", instructions="Be brief.") as s:
        deltas = [e.delta for e in s if e.type == "response.output_text.delta"]
        final = s.get_final_response()
    assert "".join(deltas) == final.output_text == "a" * 8
    assert final.usage.output_tokens == 8
    events = list(client.responses.create(model=MODEL, input="hi", stream=True))
    assert events[-1].type == "response.completed" and events[-1].response.output_text == "a" * 8


def test_a_failure_mid_stream_is_response_failed_with_what_was_billed(db, tenant):
    tenant_id, key = tenant
    with serve(db, CannedBackend(fail_after=2)) as server:
        r, events = stream(server, key, input="hi")
        assert r.status_code == 200
        assert [e["type"] for e in events] == OPENING + ["response.output_text.delta"] * 2 + ["response.failed"]
        failed = events[-1]["response"]
        assert failed["status"] == "failed" and failed["error"]["code"] == "server_error"
        assert failed["usage"]["output_tokens"] == 2 and failed["output"][0]["content"][0]["text"] == "aa"
        # Not stored: there is nothing to continue from.
        assert httpx.get(f"{server.url}/v1/responses/{failed['id']}", headers=auth(key)).status_code == 404
    (row,) = usage_rows(db[1], tenant_id)
    assert (row.status, row.completion_tokens) == ("error", 2)


def test_a_budget_that_runs_out_mid_stream(db, live):
    tenant_id, key = make_tenant(db[1], monthly_token_budget=7)  # 2 prompt tokens + 5 of the 8 asked for
    r, events = stream(live, key, input="hi", max_output_tokens=8)
    assert r.status_code == 200
    failed = events[-1]["response"]
    assert events[-1]["type"] == "response.failed" and failed["error"]["code"] == "insufficient_quota"
    assert failed["output"][0]["content"][0]["text"] == "a" * 5 and failed["usage"]["total_tokens"] == 7
    (row,) = usage_rows(db[1], tenant_id)
    assert row.status == "truncated" and row.prompt_tokens + row.completion_tokens == 7
    assert stream(live, key, input="hi")[0].status_code == 429  # nothing left


def test_a_client_that_leaves_aborts_the_generation_and_pays_for_what_was_made(db, tenant):
    tenant_id, key = tenant
    backend = CannedBackend(tokens=200, delay_s=0.01)
    with serve(db, backend) as server:
        with httpx.stream("POST", f"{server.url}/v1/responses", headers=auth(key), timeout=30,
                          json={"model": MODEL, "input": "hi", "stream": True}) as r:
            rid, seen = r.headers["x-request-id"], 0
            for line in r.iter_lines():
                seen += line.startswith("data: ")
                if seen >= 8:
                    break
        (row,) = wait_usage_rows(db[1], tenant_id, 1)  # the server learns of it a moment later
        assert rid in backend.aborted
        assert row.status == "aborted" and 4 <= row.completion_tokens < 200
        response_id = "resp_" + rid.removeprefix("req_")
        assert httpx.get(f"{server.url}/v1/responses/{response_id}", headers=auth(key)).status_code == 404
