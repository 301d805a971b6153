"""Token counts for upstream versions, which the gateway does not run: admission's estimate of a prompt, and a
stream's count when the upstream reports no usage (the ledger line is then marked as counted by the gateway).
With a tokenizer (the version's `tokenizer:`, a local model's), its counts; without one, a bound from UTF-8 bytes
(4 per token, the usual BPE average, rounded up, plus a few per message for the chat markup)."""
from __future__ import annotations

import math
from functools import lru_cache

BYTES_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4


def message_text(message: dict) -> str:
    """A chat message's role and text, for the byte bound."""
    return f"{message.get('role', '')}{content_text(message)}"


def content_text(message: dict) -> str:
    """A chat message's text (text parts of a content list; tool calls' names and arguments)."""
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    calls = message.get("tool_calls") or []
    args = "".join(str((c.get("function") or {}).get("name", "")) + str((c.get("function") or {}).get("arguments", ""))
                   for c in calls if isinstance(c, dict))
    return f"{content or ''}{args}"


class TokenCounter:
    def __init__(self, tokenizer=None) -> None:
        self._tokenizer = tokenizer  # workers.model.tokenizer.Tokenizer, or None: the byte bound

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        if self._tokenizer is not None:
            return len(self._tokenizer.encode(text))
        return math.ceil(len(text.encode()) / BYTES_PER_TOKEN)

    def count_prompt(self, *, prompt: str | None = None, messages: list[dict] | None = None) -> int:
        if messages is None:
            if prompt is None:
                raise ValueError("prompt or messages is required")
            return max(1, self.count_text(prompt))
        if self._tokenizer is not None:
            try:
                return len(self._tokenizer.apply_chat_template(
                    [{"role": m.get("role", "user"), "content": content_text(m)} for m in messages]))
            except Exception:  # a template that refuses these roles: count the text instead
                pass
        return sum(self.count_text(message_text(m)) + TOKENS_PER_MESSAGE for m in messages) + 1


@lru_cache(maxsize=16)
def counter_for(tokenizer: str | None) -> TokenCounter:
    """One counter per tokenizer name (loaded once; a name the model registry lacks is a ValueError)."""
    if tokenizer is None:
        return TokenCounter()
    from workers.serve.tokenizer import load_tokenizer  # the tokenizer alone, not the weights

    return TokenCounter(load_tokenizer(tokenizer))
