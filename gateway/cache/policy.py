"""Whether a request may use the cache at all, and whether an answer may be stored."""
from __future__ import annotations

from gateway.cache.config import TenantCachePolicy
from gateway.cache.types import CacheRequest
from gateway.domain.cache import STORABLE_FINISH_REASONS


def bypass_reason(request: CacheRequest, policy: TenantCachePolicy) -> str | None:
    """None when the cache may answer this request; otherwise why not."""
    if not policy.enabled:
        return "disabled"
    if request.temperature > 0 and not policy.allow_sampling:
        return "sampling"
    return None


def refusal_reason(finish_reason: str, answer_text: str, prompt_tokens: int, completion_tokens: int,
                   max_tokens: int | None = None) -> str | None:
    """None when a generation may be stored; otherwise why not."""
    if finish_reason not in STORABLE_FINISH_REASONS:
        return f"finish_reason {finish_reason!r}"
    if finish_reason == "length" and (max_tokens is None or completion_tokens != max_tokens):
        return "cut before its max_tokens (the context ran out)"  # depends on the prompt's length
    if not answer_text.strip():
        return "empty answer"
    if prompt_tokens < 0 or completion_tokens < 0:
        return "negative token counts"
    return None
