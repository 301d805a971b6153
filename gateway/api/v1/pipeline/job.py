"""What a tenant asked for, validated, the same for chat and completions."""
from __future__ import annotations

from dataclasses import dataclass

from gateway.schemas.openai import ChatCompletionRequest, CompletionRequest


@dataclass(slots=True)
class Job:
    endpoint: str  # "/v1/chat/completions" | "/v1/completions"
    model: str  # the name the tenant called (an alias, a model or a version)
    prompt: str | None
    messages: list[dict] | None
    max_tokens: int | None
    temperature: float
    top_p: float
    seed: int | None
    stop: list[str]
    stream: bool
    include_usage: bool
    user: str | None

    @classmethod
    def from_chat(cls, body: ChatCompletionRequest) -> Job:
        return cls("/v1/chat/completions", body.model, None, body.engine_messages(), body.token_limit,
                   _or(body.temperature, 1.0), _or(body.top_p, 1.0), body.seed, body.stop_list(),
                   bool(body.stream), body.include_usage, body.user)

    @classmethod
    def from_completion(cls, body: CompletionRequest) -> Job:
        return cls("/v1/completions", body.model, body.prompt_text(), None, body.token_limit,
                   _or(body.temperature, 1.0), _or(body.top_p, 1.0), body.seed, body.stop_list(),
                   bool(body.stream), body.include_usage, body.user)

    @property
    def prompt_param(self) -> str:
        return "messages" if self.messages is not None else "prompt"

    def prompt_bytes(self) -> int:
        """UTF-8 bytes of the text the tenant sent (roles and contents, or the prompt)."""
        if self.messages is None:
            return len(self.prompt.encode())
        return sum(len(m["role"].encode()) + len(m["content"].encode()) for m in self.messages)


def _or(value, default):
    return default if value is None else value
