"""{{variable}} rendering: plain substitution, every missing variable named, client text never evaluated."""
import pytest

from gateway.prompts import MissingVariables
from gateway.prompts.render import render, variables_of

MESSAGES = [{"role": "system", "content": "You greet {{ name }} in {{lang}}."},
            {"role": "user", "content": "Say hi to {{name}}."}]


def test_variables_are_listed_once_sorted():
    assert variables_of(MESSAGES) == ["lang", "name"]


def test_render_substitutes_every_occurrence():
    out = render(MESSAGES, {"name": "Ada", "lang": "French"})
    assert out == [{"role": "system", "content": "You greet Ada in French."},
                   {"role": "user", "content": "Say hi to Ada."}]
    assert MESSAGES[0]["content"].startswith("You greet {{ name }}")  # the stored text is untouched


def test_missing_variables_are_all_named():
    with pytest.raises(MissingVariables) as e:
        render(MESSAGES, {"other": "x"})
    assert e.value.names == ["lang", "name"] and "lang, name" in e.value.message
    assert e.value.param == "prompt.variables"


def test_values_are_not_rendered_again_nor_evaluated():
    out = render([{"role": "user", "content": "{{a}} {{b}}"}], {"a": "{{b}}", "b": "{% for x in y %}{{ 7*7 }}"})
    assert out[0]["content"] == "{{b}} {% for x in y %}{{ 7*7 }}"


def test_text_without_variables_and_odd_braces_pass_through():
    msgs = [{"role": "user", "content": "json: {\"a\": {}} and {{ not a var! }}"}]
    assert render(msgs, {}) == msgs
