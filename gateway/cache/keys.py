"""Hashing a request into its namespace (who + model + context) and its exact key."""
from __future__ import annotations

import hashlib
import json

from gateway.cache.types import CacheRequest


class Uncacheable(ValueError):
    """The request has a shape the cache does not answer (no trailing user text, images, tools)."""


def normalise(text: str) -> str:
    """Whitespace collapsed and case folded: what the exact tier compares."""
    return " ".join(text.split()).casefold()


def message_text(message: dict) -> str:
    """A message's text; raises Uncacheable for non-text parts or tool traffic."""
    if message.get("tool_calls") or message.get("function_call") or message.get("role") in ("tool", "function"):
        raise Uncacheable("tool calls are never cached")
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                raise Uncacheable("only text content is cached")
            texts.append(str(part.get("text", "")))
        return "\n".join(texts)
    raise Uncacheable(f"unsupported content type {type(content).__name__}")


def question(request: CacheRequest) -> str:
    """The last user message: the only text compared semantically."""
    if not request.messages or request.messages[-1].get("role") != "user":
        raise Uncacheable("the last message is not a user message")
    text = message_text(request.messages[-1])
    if not text.strip():
        raise Uncacheable("the last user message is empty")
    return text


def _digest(payload: object) -> str:
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def namespace_key(request: CacheRequest) -> str:
    """hash(tenant, model, every message before the last, answer-changing settings).

    Earlier turns are kept verbatim: the same follow-up after a different conversation is a
    different question, so it must live in a different index.
    """
    context = [[m.get("role"), m.get("name"), message_text(m)] for m in request.messages[:-1]]
    stop = [request.stop] if isinstance(request.stop, str) else request.stop
    return _digest({
        "tenant": request.tenant_id,
        "model": request.model,
        "context": context,
        "sampling": [request.temperature, request.top_p, request.max_tokens, stop, request.seed],
        "extra": request.extra_params or {},
    })


def exact_key(namespace: str, question_text: str) -> str:
    return _digest([namespace, normalise(question_text)])
