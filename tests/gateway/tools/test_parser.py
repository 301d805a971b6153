"""Tool-call text back into calls: whole, and streamed in any split, with anything that is not a call kept as text."""
from __future__ import annotations

import json

import pytest

from gateway.tools.parser import CallStream, parse_calls

NAMES = ("get_weather", "add")
CALL = '<tool_call>[{"name": "add", "arguments": {"a": 3, "b": 4}}]</tool_call>'


def test_a_call_block_is_calls_and_no_text():
    text, calls = parse_calls(CALL, NAMES)
    assert text == "" and [(c.name, json.loads(c.arguments)) for c in calls] == [("add", {"a": 3, "b": 4})]
    assert calls[0].id.startswith("call_") and len(calls[0].id) == 29


def test_several_calls_one_object_and_string_arguments():
    two = ('<tool_call>[{"name": "add", "arguments": {"a": 1, "b": 2}}, '
           '{"name": "get_weather", "arguments": {}}]</tool_call>')
    assert [c.name for c in parse_calls(two, NAMES)[1]] == ["add", "get_weather"]
    one = '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1}"}</tool_call>'
    assert json.loads(parse_calls(one, NAMES)[1][0].arguments) == {"a": 1}
    ids = {c.id for c in parse_calls(two, NAMES)[1]}
    assert len(ids) == 2


@pytest.mark.parametrize("text", [
    "plain answer",
    "<tool_call>[{\"name\": \"delete_all\", \"arguments\": {}}]</tool_call>",  # not offered
    "<tool_call>[{\"name\": \"add\", \"arguments\": {\"a\": </tool_call>",  # not JSON
    "<tool_call>[{\"name\": \"add\", \"arguments\": [1, 2]}]</tool_call>",  # arguments not an object
    "<tool_call>[{\"name\": \"add\", \"arguments\": {}}]",  # cut off before the closing tag
    "a < b and <tool",  # a partial tag at the end
])
def test_what_is_not_a_call_stays_text(text):
    assert parse_calls(text, NAMES) == (text.strip(), [])


def test_text_around_a_call_is_kept():
    text, calls = parse_calls(f"Let me add. {CALL} Done.", NAMES)
    assert text == "Let me add.  Done." and [c.name for c in calls] == ["add"]


@pytest.mark.parametrize("answer", [CALL, f"Sure. {CALL}", "no call < here <tool_call", "x" * 30])
def test_streaming_in_any_split_gives_the_whole_answer(answer):
    whole_text, whole_calls = parse_calls(answer, NAMES)
    for size in (1, 2, 3, 7, 11, len(answer)):
        stream, shown, names = CallStream(NAMES), "", []
        for i in range(0, len(answer), size):
            piece = stream.feed(answer[i:i + size])
            shown += piece.text
            names += [c.name for c in piece.calls]
        shown += stream.finish().text
        assert shown.strip() == whole_text and names == [c.name for c in whole_calls]


def test_streaming_holds_back_only_a_possible_tag():
    stream = CallStream(NAMES)
    assert stream.feed("Hello <to").text == "Hello "
    assert stream.feed("day").text == "<today"
    assert stream.feed(CALL[:20]).text == "" and stream.calls_made == 0
    piece = stream.feed(CALL[20:])
    assert [c.name for c in piece.calls] == ["add"] and stream.calls_made == 1
