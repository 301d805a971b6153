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


def context(request: CacheRequest) -> str:
    """The earlier user turns, one a line: the verifier compares them like the question itself."""
    return "\n".join(message_text(m) for m in request.messages[:-1] if m.get("role") == "user")


def namespace_key(request: CacheRequest) -> str:
    """hash(tenant, model, the shape of the earlier turns, system messages, answer-changing settings).

    The same follow-up after a different conversation is a different question, but the same
    conversation may be worded otherwise. So earlier turns enter the key by role (and system or developer
    messages, instruction templates, verbatim); their user text is checked by the verifier on each
    candidate (context()), like the question; assistant turns are the model's own words, left out.
    max_tokens is not part of it: an answer serves other limits by being cut (truncation.py).
    """
    texts = [message_text(m) for m in request.messages[:-1]]  # raises Uncacheable on tool traffic
    context = [[m.get("role"), m.get("name"), text if m.get("role") in ("system", "developer") else ""]
               for m, text in zip(request.messages[:-1], texts)]
    stop = [request.stop] if isinstance(request.stop, str) else request.stop
    return _digest({
        "tenant": request.tenant_id,
        "model": request.model,
        "context": context,
        "sampling": [request.temperature, request.top_p, stop, request.seed],
        "extra": request.extra_params or {},
    })


def exact_key(namespace: str, question_text: str, context_text: str = "") -> str:
    if not context_text:
        return _digest([namespace, normalise(question_text)])
    return _digest([namespace, normalise(question_text), normalise(context_text)])
