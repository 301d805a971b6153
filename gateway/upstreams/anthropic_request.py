"""An OpenAI chat.completions request body -> an Anthropic Messages request body (pure, no I/O).

What Messages cannot express (n > 1, logprobs, penalties, response_format json, ...) is refused with a ValueError
whose first word is the field, never dropped in silence. Fields that steer the gateway rather than the answer
(stream_options, priority, metadata, store, ...), seed (a best-effort hint only) and fields it does not know are
left out."""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

DEFAULT_MAX_TOKENS = 4096  # Messages requires max_tokens; OpenAI clients may leave it to the model's limit
# Messages wants alternating turns starting with the user; a chat that opens with the assistant (a UI's
# greeting) gets this minimal user turn in front rather than a refusal.
LEADING_USER_TEXT = "(conversation start)"
IMAGE_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+);base64,(.*)$", re.DOTALL)

def _default(value: Any) -> bool:
    """True where an unsupported field holds its no-op value (absent, null, false, zero, empty, n=1, ...)."""
    return value is None or value is False or value in (0, [], {})


# Fields Messages has no counterpart for: allowed only at their no-op value.
_UNSUPPORTED: dict[str, Callable[[Any], bool]] = {
    "n": lambda v: v in (None, 1),
    "logprobs": _default,
    "top_logprobs": _default,
    "logit_bias": _default,
    "frequency_penalty": _default,
    "presence_penalty": _default,
    "functions": _default,
    "function_call": _default,
    "audio": _default,
    "prediction": _default,
    "reasoning_effort": _default,
    "structured_outputs": _default,
    "min_p": _default,
    "min_tokens": _default,
    "ignore_eos": _default,
    "stop_token_ids": _default,
    "include_stop_str_in_output": _default,
    "repetition_penalty": lambda v: v in (None, 1, 1.0),
    "modalities": lambda v: v in (None, [], ["text"]),
    "response_format": lambda v: v is None or (isinstance(v, dict) and v.get("type") == "text"),
}


def to_messages_request(chat: dict, *, model: str) -> dict:
    """An OpenAI chat.completions request body -> a Messages request body for `model` (stream kept)."""
    for field, is_noop in _UNSUPPORTED.items():
        if not is_noop(chat.get(field)):
            raise ValueError(f"{field}: not supported by this model's upstream (Anthropic Messages)")
    system, turns = _conversation(chat.get("messages"))
    body: dict[str, Any] = {"model": model, "max_tokens": _max_tokens(chat), "messages": turns}
    if system:
        body["system"] = system
    if (stop := _stop_sequences(chat.get("stop"))) is not None:
        body["stop_sequences"] = stop
    if (temperature := chat.get("temperature")) is not None:
        body["temperature"] = min(max(float(temperature), 0.0), 1.0)  # OpenAI's 0..2 clamped to Messages' 0..1
    if chat.get("top_p") is not None:
        body["top_p"] = chat["top_p"]
    if isinstance(chat.get("top_k"), int) and chat["top_k"] > 0:  # vLLM's -1 / 0 mean "off"
        body["top_k"] = chat["top_k"]
    body.update(_tools(chat))
    if chat.get("user"):
        body["metadata"] = {"user_id": str(chat["user"])}
    if chat.get("stream"):
        body["stream"] = True
    return body


def _max_tokens(chat: dict) -> int:
    value = chat.get("max_completion_tokens")
    field = "max_completion_tokens"
    if value is None:
        value, field = chat.get("max_tokens"), "max_tokens"
    if value is None:
        return DEFAULT_MAX_TOKENS
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{field}: must be a positive integer")
    return value


def _stop_sequences(stop: Any) -> list[str] | None:
    if stop is None:
        return None
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise ValueError("stop: must be a string or a list of strings")
    kept = [s for s in stops if s.strip()]  # Messages refuses whitespace-only stop sequences
    return kept or None


def _tools(chat: dict) -> dict:
    """`tools` and `tool_choice` for Messages; none at all for an empty tool list (Messages refuses `[]`)."""
    tools = chat.get("tools") or []
    choice = chat.get("tool_choice")
    if not tools:
        if choice in (None, "none"):
            return {}
        raise ValueError("tool_choice: needs tools")
    converted = [_tool(i, t) for i, t in enumerate(tools)]
    out: dict[str, Any] = {"tools": converted}
    anthropic_choice = _tool_choice(choice, {t["name"] for t in converted})
    if chat.get("parallel_tool_calls") is False and anthropic_choice.get("type") != "none":
        anthropic_choice["disable_parallel_tool_use"] = True
    if choice is not None or "disable_parallel_tool_use" in anthropic_choice:
        out["tool_choice"] = anthropic_choice
    return out


def _tool(i: int, tool: Any) -> dict:
    if not isinstance(tool, dict) or tool.get("type", "function") != "function":
        raise ValueError(f"tools[{i}]: only function tools are supported by this model's upstream")
    function = tool.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise ValueError(f"tools[{i}].function: needs a name")
    out = {"name": function["name"]}
    if function.get("description"):
        out["description"] = function["description"]
    parameters = function.get("parameters") or {"properties": {}}
    if not isinstance(parameters, dict):
        raise ValueError(f"tools[{i}].function.parameters: must be a JSON schema object")
    out["input_schema"] = {"type": "object", **parameters}  # Messages insists on the type OpenAI implies
    return out


def _tool_choice(choice: Any, names: set[str]) -> dict:
    simple = {None: "auto", "auto": "auto", "none": "none", "required": "any"}
    if isinstance(choice, str) or choice is None:
        if choice not in simple:
            raise ValueError(f"tool_choice: unknown value {str(choice)[:32]!r}")
        return {"type": simple[choice]}
    name = (choice.get("function") or {}).get("name") if isinstance(choice, dict) else None
    if not isinstance(name, str) or name not in names:
        raise ValueError("tool_choice: must name a function in tools")
    return {"type": "tool", "name": name}


# ---- messages -------------------------------------------------------------------------------------------

def _conversation(messages: Any) -> tuple[str, list[dict]]:
    """(the joined system prompt, the alternating Messages turns starting with the user)."""
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages: must be a non-empty list")
    system: list[str] = []
    turns: list[dict] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise ValueError(f"messages[{i}]: must be an object")
        role = message.get("role")
        if role in ("system", "developer"):
            if text := _text_only(message.get("content"), f"messages[{i}].content"):
                system.append(text)
            continue
        convert = _TURNS.get(role)
        if convert is None:
            raise ValueError(f"messages[{i}].role: {str(role)[:32]!r} is not supported by this model's upstream")
        role, blocks = convert(message, i)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if not turns:
        raise ValueError("messages: needs at least one user or assistant message")
    if turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": LEADING_USER_TEXT}]})
    last = turns[-1]["content"]
    if turns[-1]["role"] == "assistant" and last[-1]["type"] == "text":  # a prefill: no trailing blank allowed
        last[-1]["text"] = last[-1]["text"].rstrip()
    for turn in turns:
        _finish_turn(turn)
    return "\n\n".join(system), turns


def _finish_turn(turn: dict) -> None:
    blocks = turn["content"]
    if turn["role"] == "user":  # Messages wants a user turn's tool results before anything else in it
        blocks.sort(key=lambda b: b["type"] != "tool_result")
    if len(blocks) == 1 and blocks[0]["type"] == "text":
        turn["content"] = blocks[0]["text"]


def _user(message: dict, i: int) -> tuple[str, list[dict]]:
    return "user", _parts(message.get("content"), f"messages[{i}].content", images=True)


def _assistant(message: dict, i: int) -> tuple[str, list[dict]]:
    blocks = _parts(message.get("content"), f"messages[{i}].content", images=False)
    for j, call in enumerate(message.get("tool_calls") or []):
        blocks.append(_tool_use(call, f"messages[{i}].tool_calls[{j}]"))
    return "assistant", blocks


def _tool_result(message: dict, i: int) -> tuple[str, list[dict]]:
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(f"messages[{i}].tool_call_id: required on a tool message")
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
    if text := _text_only(message.get("content"), f"messages[{i}].content"):
        block["content"] = text
    return "user", [block]


_TURNS = {"user": _user, "assistant": _assistant, "tool": _tool_result}


def _tool_use(call: Any, where: str) -> dict:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not call.get("id"):
        raise ValueError(f"{where}: needs an id and a function name")
    arguments = function.get("arguments") or "{}"
    try:
        arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError:
        raise ValueError(f"{where}.function.arguments: not valid JSON") from None
    if not isinstance(arguments, dict):
        raise ValueError(f"{where}.function.arguments: must be a JSON object")
    return {"type": "tool_use", "id": call["id"], "name": function["name"], "input": arguments}


def _text_only(content: Any, where: str) -> str:
    blocks = _parts(content, where, images=False)
    return "\n\n".join(b["text"] for b in blocks)


def _parts(content: Any, where: str, *, images: bool) -> list[dict]:
    """OpenAI message content (a string or a list of parts) -> Messages content blocks, empty text left out."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    if not isinstance(content, list):
        raise ValueError(f"{where}: must be a string or a list of parts")
    blocks = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("text", "refusal"):
            if (text := part.get(kind)) and str(text).strip():  # Messages refuses blank text blocks
                blocks.append({"type": "text", "text": str(text)})
        elif kind == "image_url" and images:
            blocks.append(_image(part.get("image_url"), f"{where}[{j}].image_url"))
        else:
            raise ValueError(f"{where}[{j}].type: {str(kind)[:32]!r} is not supported here by this model's upstream")
    return blocks


def _image(image: Any, where: str) -> dict:
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str):
        raise ValueError(f"{where}: needs a url")
    if match := _DATA_URL.match(url):
        media_type = match.group(1).lower()
        if media_type not in IMAGE_MEDIA_TYPES:
            raise ValueError(f"{where}: {media_type} is not one of {', '.join(sorted(IMAGE_MEDIA_TYPES))}")
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": match.group(2)}}
    if url.startswith(("https://", "http://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    raise ValueError(f"{where}: must be an http(s) URL or a base64 data: URL")
