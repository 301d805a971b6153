"""Adapters for the chat route: a CacheRequest from a chat body, a policy from the caller."""
from __future__ import annotations

from typing import Any

from gateway.cache.config import CacheConfig, TenantCachePolicy
from gateway.cache.types import CacheRequest

# Body fields that can change the answer beyond the sampling settings CacheRequest names.
_ANSWER_CHANGING = ("frequency_penalty", "presence_penalty", "logit_bias", "response_format", "tools",
                    "tool_choice", "functions", "function_call", "logprobs", "top_logprobs", "reasoning_effort")


def _plain(value: Any) -> Any:
    """A body field as JSON data (nested request models included), for the cache's key."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value.model_dump(mode="json", exclude_none=True, by_alias=True) if hasattr(value, "model_dump") else value


def cache_request(tenant_id: str, body: Any) -> CacheRequest:
    """From a ChatCompletionRequest (gateway.schemas.openai). temperature None = OpenAI's default 1."""
    extra = {name: _plain(getattr(body, name, None)) for name in _ANSWER_CHANGING}
    return CacheRequest(
        tenant_id=tenant_id,
        model=body.model,
        messages=[m.model_dump(exclude_none=True) for m in body.messages],
        temperature=1.0 if body.temperature is None else body.temperature,
        top_p=body.top_p,
        max_tokens=body.token_limit,
        stop=body.stop,
        seed=body.seed,
        stream=bool(body.stream),
        extra_params={k: v for k, v in extra.items() if v is not None},
    )


def tenant_policy(config: CacheConfig, principal: Any) -> TenantCachePolicy:
    """From a Principal's cache_* fields (gateway.security.principal); None takes the default."""
    return config.policy_for(
        enabled=principal.cache_enabled, allow_sampling=principal.cache_allow_sampling,
        threshold=principal.cache_threshold, ttl_s=principal.cache_ttl_s,
        max_entries=principal.cache_max_entries,
    )
