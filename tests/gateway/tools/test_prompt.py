"""Tool conversations as plain chat messages every template renders."""
from __future__ import annotations

import json

from gateway.schemas.openai import ChatCompletionRequest
from gateway.tools.prompt import call_text, tools_system_prompt, with_tools
from gateway.tools.spec import Function, ToolSet

ADD = Function("add", "Add.", {"type": "object"})


def test_the_tools_join_the_system_turn_or_open_one():
    tools = ToolSet((ADD,), "auto")
    prompt = tools_system_prompt(tools)
    assert "<tools>" in prompt and json.dumps([ADD.declaration()]) in prompt and "plain text" in prompt
    assert with_tools([{"role": "user", "content": "hi"}], tools) == [
        {"role": "system", "content": prompt}, {"role": "user", "content": "hi"}]
    merged = with_tools([{"role": "system", "content": "Be kind."}, {"role": "user", "content": "hi"}], tools)
    assert merged[0]["content"] == f"Be kind.\n\n{prompt}" and len(merged) == 2


def test_none_offers_nothing_and_a_forced_call_offers_the_one_function():
    other = Function("sub", None, {"type": "object"})
    assert with_tools([{"role": "user", "content": "hi"}], ToolSet((ADD,), "none")) == [
        {"role": "user", "content": "hi"}]
    forced = tools_system_prompt(ToolSet((ADD, other), "function", "sub"))
    assert '"sub"' in forced and '"add"' not in forced and "Answer with a call." in forced


def test_earlier_calls_and_results_become_text():
    body = ChatCompletionRequest.model_validate({"model": "m", "messages": [
        {"role": "user", "content": "3+4?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 3, \"b\": 4}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "7"}],
        "tools": [{"type": "function", "function": {"name": "add"}}]})
    messages = body.engine_messages(body.tool_set)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == '<tool_call>[{"name": "add", "arguments": {"a": 3, "b": 4}}]</tool_call>'
    assert messages[3]["content"] == "<tool_response>\n7\n</tool_response>"
    assert (call_text([{"name": "f", "arguments": "not json"}])
            == '<tool_call>[{"name": "f", "arguments": "not json"}]</tool_call>')
