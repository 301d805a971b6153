"""The grammar that forces a call: it compiles, accepts the calls it should and refuses the rest."""
from __future__ import annotations

import json

import llguidance
import pytest
from llguidance import LLMatcher, LLTokenizer

from gateway.tools.grammar import tool_grammar
from gateway.tools.spec import Function, ToolSet
from tests.workers.engine.fakes import EOS, byte_backend

ADD = Function("add", None, {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
                             "additionalProperties": False})
WEATHER = Function("get_weather", "Weather.", {"type": "object", "properties": {"city": {"type": "string"}},
                                               "required": ["city"], "additionalProperties": False})


def accepts(grammar: str, text: str) -> bool:
    tokenizer = LLTokenizer(byte_backend().to_str(), n_vocab=257, eos_token=EOS)
    matcher = LLMatcher(tokenizer, llguidance.grammar_from("grammar", grammar), log_level=0)
    ok = matcher.consume_tokens(list(text.encode()))
    return bool(ok) and not matcher.is_error() and matcher.is_accepting()


def test_nothing_to_enforce_without_a_forced_call_or_a_format():
    assert tool_grammar(ToolSet((ADD,), "auto"), None) is None
    assert tool_grammar(ToolSet((ADD,), "none"), {"type": "object"}) is None


def test_required_takes_one_call_of_any_offered_function():
    g = tool_grammar(ToolSet((ADD, WEATHER), "required"), None)
    assert accepts(g, '<tool_call>[{"name": "add", "arguments": {"a": 1}}]</tool_call>')
    assert accepts(g, '<tool_call>[{"name": "get_weather", "arguments": {"city": "Oslo"}}]</tool_call>')
    assert not accepts(g, '<tool_call>[{"name": "add", "arguments": {"city": "Oslo"}}]</tool_call>')
    assert not accepts(g, "I would rather not.")


def test_a_named_function_only():
    g = tool_grammar(ToolSet((ADD, WEATHER), "function", "get_weather"), None)
    assert accepts(g, '<tool_call>[{"name": "get_weather", "arguments": {"city": "Oslo"}}]</tool_call>')
    assert not accepts(g, '<tool_call>[{"name": "add", "arguments": {"a": 1}}]</tool_call>')


def test_auto_with_a_format_is_a_call_or_the_json_answer():
    answer = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}
    g = tool_grammar(ToolSet((ADD,), "auto"), answer)
    assert accepts(g, '{"ok": true}')
    assert accepts(g, '<tool_call>[{"name": "add", "arguments": {"a": 2}}, {"name": "add", "arguments": {"a": 3}}]'
                      '</tool_call>')
    assert not accepts(g, "plain words")


@pytest.mark.parametrize("name", ['quo"te', "back\\slash"])
def test_names_are_quoted_safely(name):
    f = Function(name, None, {"type": "object"})
    g = tool_grammar(ToolSet((f,), "required"), None)
    assert accepts(g, '<tool_call>[{"name": ' + json.dumps(name) + ', "arguments": {}}]</tool_call>')
