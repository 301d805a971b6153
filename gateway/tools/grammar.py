"""A Lark grammar (llguidance's dialect, the engine's `structured` kind "grammar") for what a tool request
allows the model to write, when that is narrower than free text:

- a call is required (tool_choice "required" or a named function): exactly one call, its `name` one of the
  offered functions and its `arguments` valid under that function's parameters schema;
- tools are optional (tool_choice "auto") and the answer must also match a response_format: either a call
  (as above, one or more) or the JSON answer.

Otherwise there is nothing to enforce and `tool_grammar` returns None. One call when one is forced: a small model
made to write a list could go on adding calls until max_tokens.
"""
from __future__ import annotations

import json

from gateway.tools.spec import Function, ToolSet

OPEN, CLOSE = "<tool_call>", "</tool_call>"
# JSON written as json.dumps writes it, with no free whitespace a small model could pad with (llguidance option).
_COMPACT = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


def _call_schema(functions: tuple[Function, ...]) -> dict:
    """One call object {"name": ..., "arguments": {...}} of any of `functions`."""
    options = [{"type": "object", "properties": {"name": {"const": f.name}, "arguments": f.parameters},
                "required": ["name", "arguments"], "additionalProperties": False} for f in functions]
    schema = options[0] if len(options) == 1 else {"anyOf": options}
    return {**schema, "x-guidance": _COMPACT}


def _lark_string(text: str) -> str:
    return json.dumps(text)  # a JSON string literal is a Lark string literal for these characters


def tool_grammar(tools: ToolSet, answer_schema: dict | None) -> str | None:
    """The grammar for `tools` (and the JSON answer's schema, when response_format asks for one), or None."""
    offered = tools.offered
    if not offered or not (tools.must_call or answer_schema is not None):
        return None
    call = f"call: %json {json.dumps(_call_schema(offered))}"
    if tools.must_call:
        return f"start: {_lark_string(OPEN + '[')} call {_lark_string(']' + CLOSE)}\n{call}\n"
    answer = json.dumps({**answer_schema, "x-guidance": _COMPACT})
    return (f"start: calls | answer\n"
            f"calls: {_lark_string(OPEN + '[')} call (\", \" call)* {_lark_string(']' + CLOSE)}\n"
            f"answer: %json {answer}\n{call}\n")
