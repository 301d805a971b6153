"""The pool backend and the upstream backend behind one ModelBackend: upstream versions go to external servers,
the rest to the pool. Routes and the pipeline see one backend, so limits, budgets, guardrails, the semantic
cache, routing and billing apply to both alike."""
from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from gateway.serving.base import GenerationChunk, GenerationRequest, ModelBackend, VersionInfo

if TYPE_CHECKING:  # upstreams build on serving.base; the composite only holds one
    from gateway.upstreams.backend import UpstreamBackend


class CompositeBackend:
    def __init__(self, pool: ModelBackend, upstreams: UpstreamBackend) -> None:
        self.pool, self.upstreams = pool, upstreams

    def __getattr__(self, name: str):
        # The pool's extras (replica_pool, replica_counts for economics; engine metrics) stay reachable.
        if name in ("pool", "upstreams"):
            raise AttributeError(name)
        return getattr(self.pool, name)

    def _for(self, version: str) -> ModelBackend:
        return self.upstreams if version in self.upstreams.names else self.pool

    async def start(self) -> None:
        await self.pool.start()
        await self.upstreams.start()

    async def stop(self) -> None:
        try:
            await self.upstreams.stop()
        finally:
            await self.pool.stop()

    def versions(self) -> list[VersionInfo]:
        return [*self.pool.versions(), *self.upstreams.versions()]

    def count_prompt_tokens(self, version: str, *, prompt: str | None = None,
                            messages: list[dict] | None = None) -> int:
        return self._for(version).count_prompt_tokens(version, prompt=prompt, messages=messages)

    def stream(self, request: GenerationRequest) -> AsyncGenerator[GenerationChunk, None]:
        return self._for(request.version).stream(request)

    def token_texts(self, version: str, token_ids: list[int]) -> list[str]:
        return self._for(version).token_texts(version, token_ids)

    def tokenize(self, version: str, *, prompt: str | None = None, messages: list[dict] | None = None,
                 add_generation_prompt: bool = True) -> list[int]:
        return self._for(version).tokenize(version, prompt=prompt, messages=messages,
                                           add_generation_prompt=add_generation_prompt)

    def detokenize(self, version: str, token_ids: list[int]) -> str:
        return self._for(version).detokenize(version, token_ids)

    async def health(self) -> dict[str, bool]:
        return {**await self.pool.health(), **await self.upstreams.health()}


def with_upstreams(pool: ModelBackend, upstreams: UpstreamBackend | None) -> ModelBackend:
    """The pool alone when the catalogue names no upstream version."""
    return pool if upstreams is None or not upstreams.names else CompositeBackend(pool, upstreams)
