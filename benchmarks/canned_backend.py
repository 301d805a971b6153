"""A ModelBackend that answers instantly with canned tokens: a benchmark tool, so the gateway's
own cost can be measured without a model. Never registered in gateway.serving.factory."""
from __future__ import annotations

from collections.abc import AsyncIterator

from gateway.serving.base import GenerationChunk, GenerationRequest, VersionInfo

VERSION = "smollm2-135m-instruct@fp32"


class CannedBackend:
    def __init__(self, *, tokens: int = 4) -> None:
        self.tokens = tokens

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    def versions(self) -> list[VersionInfo]:
        return [VersionInfo(VERSION, VERSION.partition("@")[0], 2048)]

    def count_prompt_tokens(self, version: str, *, prompt: str | None = None,
                            messages: list[dict] | None = None) -> int:
        text = prompt if prompt is not None else " ".join(m["content"] for m in messages or [])
        return len(text.split())

    async def stream(self, request: GenerationRequest) -> AsyncIterator[GenerationChunk]:
        prompt = self.count_prompt_tokens(request.version, prompt=request.prompt, messages=request.messages)
        n = min(self.tokens, request.max_tokens)
        for i in range(1, n + 1):
            yield GenerationChunk(text=" tok", token_ids=[42], prompt_tokens=prompt, completion_tokens=i,
                                  cached_tokens=0, finish_reason="length" if i == n else None)

    async def health(self) -> dict[str, bool]:
        return {VERSION: True}
