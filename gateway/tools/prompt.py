"""A tool conversation as plain chat messages ({"role", "content"} with string content), which every chat
template renders: the offered functions go into the system turn, an assistant's earlier calls become the
text it would have written for them, and a tool's result becomes a user turn wrapped in <tool_response>."""
from __future__ import annotations

import json
from typing import Any

from gateway.tools.grammar import CLOSE, OPEN
from gateway.tools.spec import ToolSet

_INSTRUCTIONS = (
    "You may call the functions below, described as JSON between <tools> and </tools>.\n"
    "<tools>{tools}</tools>\n"
    "To call functions, answer only with {open}[{{\"name\": <function name>, \"arguments\": <arguments object>}}]"
    "{close}, one object per call. {rule}"
)
_RULES = {False: "If no function fits, answer in plain text.", True: "Answer with a call."}


def tools_system_prompt(tools: ToolSet) -> str | None:
    offered = tools.offered
    if not offered:
        return None
    declarations = json.dumps([f.declaration() for f in offered], ensure_ascii=False)
    return _INSTRUCTIONS.format(tools=declarations, open=OPEN, close=CLOSE, rule=_RULES[tools.must_call])


def call_text(calls: list[dict[str, Any]]) -> str:
    """An assistant's earlier calls ({"name", "arguments" (a JSON string)}) as the model writes them."""
    written = [{"name": c["name"], "arguments": _arguments(c["arguments"])} for c in calls]
    return f"{OPEN}{json.dumps(written, ensure_ascii=False)}{CLOSE}"


def result_text(content: str) -> str:
    return f"<tool_response>\n{content}\n</tool_response>"


def with_tools(messages: list[dict[str, str]], tools: ToolSet | None) -> list[dict[str, str]]:
    """`messages` (already plain) with the tools' instructions in the system turn (a new one if none)."""
    prompt = tools_system_prompt(tools) if tools is not None else None
    if prompt is None:
        return messages
    if messages and messages[0]["role"] == "system":
        return [{"role": "system", "content": f"{messages[0]['content']}\n\n{prompt}"}, *messages[1:]]
    return [{"role": "system", "content": prompt}, *messages]


def _arguments(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # as the client sent it: the model reads it back as a string
