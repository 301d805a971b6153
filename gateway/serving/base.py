"""The one interface through which the gateway reaches models.

Two implementations: in process (the workers engine runs inside the gateway) and
Ray Serve (a pool of replicas). Routes never import either directly.
"""
from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from workers.serve import protocol


class BackendError(Exception):
    """A version cannot serve the request. Raised before the first chunk only."""


class VersionUnavailable(BackendError):
    """No healthy replica (try a fallback)."""


class VersionOverloaded(BackendError):
    """Replicas are at capacity (try a fallback, else 503)."""


class TenantQueueFull(BackendError):
    """This tenant already has as many requests waiting on the version's replica as it may: a 429 with
    Retry-After, and no fallback (another version would only take the same flood)."""


class UpstreamRefused(VersionUnavailable):
    """An external upstream refused or could not take the request before any token (429, 5xx, refused
    connection, a silent first token): try a fallback, else answer `status` with Retry-After."""

    def __init__(self, message: str, *, status: int, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.status, self.retry_after_s = status, retry_after_s


class GenerationFailed(Exception):
    """The generation broke after it started (replica died mid-stream)."""


@dataclass(frozen=True, slots=True)
class VersionInfo:
    name: str  # "smollm2-135m-instruct@fp32"
    model: str  # "smollm2-135m-instruct": the priced, public model
    max_model_len: int
    upstream: str | None = None  # the external upstream serving it (gateway/upstreams); None: the pool


@dataclass(slots=True)
class GenerationRequest:
    """A generation as the engine takes it: the sampling fields are workers.SamplingParams' own (the Ray
    replica builds its SamplingParams from this, sent as a protocol.Request; workers/serve/protocol.py)."""

    request_id: str
    version: str
    prompt: str | None = None  # exactly one of prompt / messages
    messages: list[dict] | None = None
    n: int = 1
    max_tokens: int = 16
    min_tokens: int = 0
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    stop_token_ids: list[int] = field(default_factory=list)
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    include_stop_str_in_output: bool = False
    speculative: bool = True  # False: never draft for this request (speculative decoding, where configured)
    logprobs: int | None = None  # None: off; k: each token's logprob and its k likeliest alternatives
    # None: free text; else what the output must match, {"kind", "value"} (workers/structured/spec.py)
    structured: dict | None = None
    # The engine's queue order (workers/schedule_params.py): lower priority runs earlier; `tenant` is an
    # opaque fair-share key (never the tenant's identity) and `tenant_weight` its share.
    priority: int = 0
    tenant: str | None = None
    tenant_weight: float = 1.0
    # The tenant's reserved throughput on this model (output tokens/s): the engine runs its work ahead of
    # best-effort work up to that rate (workers/engine/reservations.py). 0: none.
    reserved_tokens_per_s: float = 0.0
    # Opaque, per tenant: the engine's prefix cache reuses blocks only between requests with the
    # same salt (past any operator-declared public prefix). Never the tenant's identity.
    cache_salt: str | None = None
    # Upstream versions only: the client's own request body (OpenAI's shape), passed through natively (tools,
    # response_format, logprobs...); the fields above still say what the gateway admitted (max_tokens).
    upstream_body: dict | None = None

    def to_wire(self) -> protocol.Request:
        """The replica's request: every field but upstream_body, which only upstream versions read."""
        return protocol.Request(**{name: getattr(self, name) for name in protocol.Request.__struct_fields__})


@dataclass(slots=True, frozen=True)
class TokenLogprob:
    """A generated token's logprob and its likeliest alternatives. The pool's engine names tokens by id (the
    gateway decodes them); an upstream names them by text, as its API sent them (`token`, `top_tokens`; token_id
    is then -1)."""

    token_id: int
    logprob: float
    top: tuple[tuple[int, float], ...] = ()  # (token_id, logprob), likeliest first
    token: str | None = None
    top_tokens: tuple[tuple[str, float], ...] = ()  # (text, logprob), likeliest first: an upstream's alternatives


@dataclass(slots=True)
class CompletionDelta:
    """What one of the n completions gained in a chunk."""

    index: int
    text: str
    token_ids: list[int]
    finish_reason: str | None = None  # set on this completion's last delta
    logprobs: list[TokenLogprob] | None = None  # aligned with token_ids, when asked for
    cumulative_logprob: float | None = None  # running sum (not a delta): best_of picks by it
    # An upstream's native tool-call deltas (OpenAI's chunk shape: index, id, type, function{name, arguments}),
    # carried through as-is; pool versions' calls are parsed from the text instead (gateway/tools).
    tool_calls: list[dict] | None = None


@dataclass(slots=True)
class GenerationChunk:
    text: str  # completion 0's new text since the previous chunk
    token_ids: list[int]  # completion 0's new token ids since the previous chunk
    prompt_tokens: int
    completion_tokens: int  # cumulative, summed over the n completions
    cached_tokens: int  # prompt tokens served from the engine's prefix cache
    finish_reason: str | None = None  # completion 0's, on the request's last chunk (all n finished)
    completions: list[CompletionDelta] = field(default_factory=list)  # every completion with news
    # Cumulative metered engine time of the request (workers/engine/step_meter.py); None: the replica does not
    # meter (an older replica).
    engine_ms: float | None = None
    # Who counted the tokens: None for the pool's engine; "upstream" (its reported usage) or "gateway" (counted
    # here with a tokenizer, the upstream reporting none) for upstream versions. Counts may change until the
    # last chunk, which carries the final ones.
    metered_by: str | None = None
    # Cumulative: of completion_tokens, those the tenant's reservation covered (billed by its fee, not per token).
    reserved_tokens: int = 0

    @classmethod
    def from_wire(cls, raw: protocol.Chunk) -> GenerationChunk:
        """From a replica's chunk (workers/serve/protocol.py)."""
        completions = [CompletionDelta(
            c.index, c.text, c.token_ids, c.finish_reason,
            None if c.logprobs is None else [TokenLogprob(lp.token_id, lp.logprob, tuple(lp.top)) for lp in c.logprobs],
            c.cumulative_logprob) for c in raw.completions]
        return cls(raw.text, raw.token_ids, raw.prompt_tokens, raw.completion_tokens, raw.cached_tokens,
                   raw.finish_reason, completions, raw.engine_ms, reserved_tokens=raw.reserved_tokens)


@runtime_checkable
class ModelBackend(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def versions(self) -> list[VersionInfo]: ...

    def count_prompt_tokens(self, version: str, *, prompt: str | None = None,
                            messages: list[dict] | None = None) -> int:
        """Tokens the prompt (or chat-templated messages) takes; ValueError on bad input."""
        ...

    def stream(self, request: GenerationRequest) -> AsyncGenerator[GenerationChunk, None]:
        """Stream a generation. Closing the iterator early (client gone) aborts it in the
        engine and frees its KV blocks. ValueError for bad parameters (a 400)."""
        ...

    def token_texts(self, version: str, token_ids: list[int]) -> list[str]:
        """Each token's own text (special tokens spelled out), for logprobs."""
        ...

    def tokenize(self, version: str, *, prompt: str | None = None, messages: list[dict] | None = None,
                 add_generation_prompt: bool = True) -> list[int]:
        """The prompt's token ids (chat-templated messages); ValueError on bad input."""
        ...

    def detokenize(self, version: str, token_ids: list[int]) -> str:
        """The text of token ids; ValueError for ids outside the vocabulary."""
        ...

    async def health(self) -> dict[str, bool]:
        """Version name -> has at least one ready replica."""
        ...
