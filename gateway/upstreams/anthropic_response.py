"""An Anthropic Message -> an OpenAI chat.completion; Anthropic error bodies -> (type, message)."""
from __future__ import annotations

import json
import re
import time

# Anthropic stop_reason -> OpenAI finish_reason
STOP_REASONS: dict[str, str] = {
    "end_turn": "stop",
    "max_tokens": "length",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "pause_turn": "stop",
}
# The error type Anthropic uses for a status, for bodies that do not say
_STATUS_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                 404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
                 529: "overloaded_error"}
MAX_ERROR_MESSAGE = 500
# Anything that looks like a credential is cut from an upstream's error message before it goes anywhere.
_SECRETS = re.compile(r"""(?i)\b(?:sk|tg|tga|tgm)-[\w-]{6,}"""  # provider and Tollgate key prefixes
                      r"""|\b(bearer\s+|(?:x-)?api[_-]?key["']?\s*[:=]\s*["']?)[^\s"',]+""")


def finish_reason(stop_reason: str | None) -> str:
    return STOP_REASONS.get(stop_reason or "end_turn", "stop")


def chat_id(message_id: str | None) -> str:
    return f"chatcmpl-{message_id or 'anthropic'}"


def usage_from(usage: dict | None) -> dict:
    """Anthropic usage -> OpenAI usage; cached prompt tokens count as prompt tokens (Anthropic reports them apart)."""
    usage = usage or {}
    cache_read = usage.get("cache_read_input_tokens") or 0
    prompt = (usage.get("input_tokens") or 0) + cache_read + (usage.get("cache_creation_input_tokens") or 0)
    completion = usage.get("output_tokens") or 0
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cache_read}}


def from_message(message: dict, *, model: str) -> dict:
    """An Anthropic Message -> an OpenAI chat.completion naming `model` (never the upstream's own id)."""
    texts, tool_calls = [], []
    for block in message.get("content") or []:
        if block.get("type") == "text":
            texts.append(block.get("text") or "")
        elif block.get("type") == "tool_use":
            tool_calls.append({"id": block["id"], "type": "function",
                               "function": {"name": block["name"], "arguments": json.dumps(block.get("input") or {})}})
    # always a string ("" beside tool calls), as the streamed answer accumulates from its first chunk's ""
    reply: dict = {"role": "assistant", "content": "".join(texts), "refusal": None}
    if tool_calls:
        reply["tool_calls"] = tool_calls
    return {"id": chat_id(message.get("id")), "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": reply, "logprobs": None,
                         "finish_reason": finish_reason(message.get("stop_reason"))}],
            "usage": usage_from(message.get("usage"))}


def error_from(status: int, body: bytes) -> tuple[str, str]:
    """(Anthropic error type, message) from an error response; a body that is not Anthropic's error shape gives
    the status's type and a generic message (the body itself, which may echo anything, is never passed on)."""
    default_type = _STATUS_TYPES.get(status, "api_error")
    try:
        error = json.loads(body).get("error")
    except (ValueError, UnicodeDecodeError, AttributeError):
        error = None
    if not isinstance(error, dict):
        return default_type, f"the upstream answered HTTP {status}"
    kind = error.get("type") if isinstance(error.get("type"), str) else default_type
    message = error.get("message") if isinstance(error.get("message"), str) else f"the upstream answered HTTP {status}"
    return kind, redact(message)[:MAX_ERROR_MESSAGE]


def redact(text: str) -> str:
    """`text` with anything shaped like a key or bearer token replaced."""
    return _SECRETS.sub(lambda m: (m.group(1) or "") + "[redacted]", text)
