"""What a hostile tenant sends: payloads that once made the engine or the event loop do unbounded work, each
with the clear refusal it must now get. Shared by tests/gateway/api/v1/test_hostile_payloads.py (the proof,
beside a light tenant) and benchmarks/hostile.py (the same under load)."""
from __future__ import annotations

import json
from collections.abc import Callable

MODEL = "smollm2-135m-instruct"
ASK = [{"role": "user", "content": "Count from one to twenty."}]
LIGHT = json.dumps({"model": MODEL, "messages": ASK, "max_tokens": 16, "temperature": 0, "ignore_eos": True})


def chat(**fields) -> dict:
    return {"model": MODEL, "messages": ASK, "max_tokens": 64, **fields}


def regex(i: int) -> dict:
    """`(a{1000}){1000}` and its cousins: each distinct, so no compile cache can answer for it."""
    return chat(structured_outputs={"regex": f"({'abc'[i % 3]}{{{1000 + i}}}){{1000}}"})


def pattern_in_schema(i: int) -> dict:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": f"^(b{{{1000 + i}}}){{1000}}$"}},
              "required": ["s"]}
    return chat(response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}})


def grammar(i: int) -> dict:
    return chat(structured_outputs={"grammar": f"start: /(c{{{1000 + i}}}){{1000}}/"})


def long_stops(i: int) -> dict:
    return chat(stop=[c * 200_000 for c in "wxyz"], ignore_eos=True, max_tokens=512)


def many_deep_tools(i: int) -> dict:
    """128 functions, each 16 objects deep: a prompt far past the context, refused from its head's tokens."""
    params: dict = {"type": "object"}
    for _ in range(16):
        params = {"type": "object", "properties": {"x": params, "y": {"type": "string"}}, "required": ["x", "y"]}
    tools = [{"type": "function", "function": {"name": f"f{i}_{k}", "parameters": params}} for k in range(128)]
    return chat(tools=tools, tool_choice="required")


def huge_n(i: int) -> dict:
    return chat(n=1000, max_tokens=512)


def logit_bias(i: int) -> dict:
    return chat(logit_bias={str(t): 100 for t in range(20_000)})


def deep_json(i: int) -> bytes:
    return b'{"model": "%s", "messages": [], "metadata": %s%s}' % (MODEL.encode(), b"[" * 100_000, b"]" * 100_000)


# name -> (payload for the i-th hostile request, the status it must get, the param its error must name)
PAYLOADS: dict[str, tuple[Callable[[int], dict | bytes], int, str | None]] = {
    "regex": (regex, 400, "structured_outputs.regex"),
    "pattern_in_schema": (pattern_in_schema, 400, "response_format"),
    "grammar": (grammar, 400, "structured_outputs.grammar"),
    "long_stop_strings": (long_stops, 400, "stop"),
    "many_deep_tools": (many_deep_tools, 400, None),
    "huge_n": (huge_n, 400, "n"),
    "logit_bias": (logit_bias, 400, "logit_bias"),
    "deep_json": (deep_json, 400, None),
}


def body(payload: dict | bytes) -> bytes:
    return payload if isinstance(payload, bytes) else json.dumps(payload).encode()
