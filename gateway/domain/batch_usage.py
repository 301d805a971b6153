"""A line's tokens as the batch's `usage` adds them up: what the ledger billed for the line's request id."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LineUsage:
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0

    @classmethod
    def of_body(cls, body: object) -> LineUsage:
        """From an endpoint's answer (chat, completions, embeddings: OpenAI's `usage`); zero when it has none,
        as an error answer, which nothing was billed for."""
        usage = body.get("usage") if isinstance(body, dict) else None
        if not isinstance(usage, dict):
            return cls()
        details = usage.get("prompt_tokens_details") or {}
        return cls(input_tokens=_int(usage.get("prompt_tokens")), cached_tokens=_int(details.get("cached_tokens")),
                   output_tokens=_int(usage.get("completion_tokens")))


def _int(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0
