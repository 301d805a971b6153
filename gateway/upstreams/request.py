"""The OpenAI-shaped body sent upstream for a GenerationRequest: the client's own body when the pipeline kept it
(tools, response_format, logprobs... pass through natively), else one built from the admitted fields."""
from __future__ import annotations

from gateway.serving.base import GenerationRequest

# The gateway decides these (or they mean something only here): never passed through as sent.
_OWN = frozenset({"model", "stream", "stream_options", "prompt", "max_tokens", "max_completion_tokens",
                  "priority", "best_of"})


def endpoint_of(request: GenerationRequest) -> str:
    return "/v1/chat/completions" if request.messages is not None else "/v1/completions"


def upstream_body(request: GenerationRequest) -> dict:
    if request.upstream_body is not None:
        body = {k: v for k, v in request.upstream_body.items() if k not in _OWN and v is not None}
        limit = "max_completion_tokens" if "max_completion_tokens" in request.upstream_body else "max_tokens"
    else:
        body = {"messages": request.messages} if request.messages is not None else {}
        body |= {k: v for k, v in (("temperature", request.temperature), ("top_p", request.top_p),
                                    ("n", request.n), ("seed", request.seed), ("stop", request.stop or None))
                 if v is not None}
        limit = "max_tokens"
    if request.messages is None:
        body["prompt"] = request.prompt  # guardrails may have redacted it: the admitted text, not the sent one
    elif "messages" not in body:
        body["messages"] = request.messages
    body[limit] = request.max_tokens
    return body
