"""What the model reads for a response, built without I/O."""
from __future__ import annotations

import pytest

from gateway.api.v1.responses.conversation import bounded, conversation
from gateway.crud.responses import Stored
from gateway.domain.errors import APIError
from gateway.schemas.responses import ResponseCreateRequest


def request(**body) -> ResponseCreateRequest:
    return ResponseCreateRequest.model_validate({"model": "m", **body})


def previous(context: list[dict], text: str) -> Stored:
    return Stored("resp_1", {"output": [{"type": "message", "content": [{"type": "output_text", "text": text}]}]},
                  context)


def test_a_string_is_one_user_message_after_the_instructions():
    conv = conversation(request(input="Hi.", instructions="Be brief."), None)
    assert conv.engine_messages() == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi."}]
    assert conv.context == [{"role": "user", "content": "Hi."}]  # what is stored leaves the instructions out


def test_items_keep_their_roles_and_developer_reads_as_system():
    conv = conversation(request(input=[
        {"role": "developer", "content": "Rules."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"},
                                                        {"type": "input_text", "text": "b"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "c", "annotations": []}]}]), None)
    assert conv.engine_messages() == [{"role": "system", "content": "Rules."}, {"role": "user", "content": "ab"},
                                      {"role": "assistant", "content": "c"}]
    assert conv.context[0]["role"] == "developer"  # stored as sent


def test_a_continuation_reads_the_previous_conversation_and_output_first():
    before = previous([{"role": "user", "content": "one"}], "two")
    conv = conversation(request(input="three", instructions="New."), before)
    assert conv.engine_messages() == [{"role": "system", "content": "New."}, {"role": "user", "content": "one"},
                                      {"role": "assistant", "content": "two"}, {"role": "user", "content": "three"}]
    assert [m["content"] for m in conv.context] == ["one", "two", "three"]


def test_empty_instructions_add_nothing():
    assert conversation(request(input="x", instructions=""), None).engine_messages() == [
        {"role": "user", "content": "x"}]


def test_bounded_counts_utf8_bytes_of_roles_and_contents():
    conv = conversation(request(input="é" * 10, instructions="ab"), None)  # system(6)+2 + user(4)+20
    assert conv.utf8_bytes() == 32
    assert bounded(conv, 32) is conv
    with pytest.raises(APIError) as e:
        bounded(conv, 31)
    assert (e.value.status, e.value.param, e.value.code) == (400, "input", "input_too_large")
