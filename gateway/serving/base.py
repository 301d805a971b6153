"""The one interface through which the gateway reaches models.

Two implementations: in process (the workers engine runs inside the gateway) and
Ray Serve (a pool of replicas). Routes never import either directly.
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


class BackendError(Exception):
    """A version cannot serve the request. Raised before the first chunk only."""


class VersionUnavailable(BackendError):
    """No healthy replica (try a fallback)."""


class VersionOverloaded(BackendError):
    """Replicas are at capacity (try a fallback, else 503)."""


class TenantQueueFull(BackendError):
    """This tenant already has as many requests waiting on the version's replica as it may: a 429 with
    Retry-After, and no fallback (another version would only take the same flood)."""


class GenerationFailed(Exception):
    """The generation broke after it started (replica died mid-stream)."""


@dataclass(frozen=True, slots=True)
class VersionInfo:
    name: str  # "smollm2-135m-instruct@fp32"
    model: str  # "smollm2-135m-instruct": the priced, public model
    max_model_len: int


@dataclass(slots=True)
class GenerationRequest:
    request_id: str
    version: str
    prompt: str | None = None  # exactly one of prompt / messages
    messages: list[dict] | None = None
    max_tokens: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    ignore_eos: bool = False
    # Opaque, per tenant: the engine's prefix cache reuses blocks only between requests with the
    # same salt (past any operator-declared public prefix). Never the tenant's identity.
    cache_salt: str | None = None


@dataclass(slots=True)
class GenerationChunk:
    text: str  # new text since the previous chunk
    token_ids: list[int]  # new token ids since the previous chunk
    prompt_tokens: int
    completion_tokens: int  # cumulative
    cached_tokens: int  # prompt tokens served from the engine's prefix cache
    finish_reason: str | None = None  # "stop" | "length" | "abort" on the last chunk


@runtime_checkable
class ModelBackend(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def versions(self) -> list[VersionInfo]: ...

    def count_prompt_tokens(self, version: str, *, prompt: str | None = None,
                            messages: list[dict] | None = None) -> int:
        """Tokens the prompt (or chat-templated messages) takes; ValueError on bad input."""
        ...

    def stream(self, request: GenerationRequest) -> AsyncIterator[GenerationChunk]:
        """Stream a generation. Closing the iterator early (client gone) aborts it in the
        engine and frees its KV blocks. ValueError for bad parameters (a 400)."""
        ...

    async def health(self) -> dict[str, bool]:
        """Version name -> has at least one ready replica."""
        ...
