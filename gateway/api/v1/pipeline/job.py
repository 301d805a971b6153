"""What a tenant asked for, validated, the same for chat and completions."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.schemas.openai import ChatCompletionRequest, CompletionRequest
from gateway.tools.spec import ToolSet


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
    sampling: dict[str, Any] = field(default_factory=dict)  # the engine's other sampling fields, when set
    logprobs: int | None = None  # None: off; k: each token's logprob and k alternatives
    best_of: int | None = None  # generate this many, return the n likeliest
    continuous_usage: bool = False  # usage on every streamed chunk (vLLM's stream_options field)
    ignored: list[str] = field(default_factory=list)  # unknown fields the request carried
    structured: dict | None = None  # what the output must match, as the engine takes it ({"kind", "value"})
    structured_param: str | None = None  # the request field that asked for it: a compile error's 400 names it
    tools: ToolSet | None = None  # the functions offered, and the rule for calling them
    priority: int | None = None  # asked for (vLLM's extension); the tenant's plan bounds it from below
    kind: str = "interactive"  # | "batch": a Batch API line (billed at the batch discount)
    # The client's body as sent (OpenAI's shape, after input guardrails): upstream versions take it natively
    # (tools, response_format, logprobs...), pool versions the fields above.
    body: dict | None = None
    max_tokens_param: str = "max_tokens"  # the body field max_tokens came from (an output cap's 400 names it)
    max_tokens_named: bool = True  # False: max_tokens is the API's own default, which a tenant's cap or default bounds

    def as_batch_line(self, priority: int) -> None:
        """Run as a Batch API line: billed as batch work, and never ahead of `priority` in the engine's queue."""
        self.kind = "batch"
        self.priority = max(priority, self.priority if self.priority is not None else priority)

    @classmethod
    def from_chat(cls, body: ChatCompletionRequest) -> Job:
        structured, param = body.output_spec
        job = cls("/v1/chat/completions", body.model, None, body.engine_messages(body.tool_set), body.token_limit,
                  _or(body.temperature, 1.0), _or(body.top_p, 1.0), body.seed, body.stop_list(),
                  bool(body.stream), body.include_usage, body.user, body.engine_sampling(), body.logprobs_k,
                  None, body.continuous_usage, body.ignored_fields, structured, param, body.tool_set, body.priority)
        if body.max_completion_tokens is not None:
            job.max_tokens_param = "max_completion_tokens"
        return job

    @classmethod
    def from_completion(cls, body: CompletionRequest) -> Job:
        job = cls("/v1/completions", body.model, body.prompt_text(), None, body.token_limit,
                  _or(body.temperature, 1.0), _or(body.top_p, 1.0), body.seed, body.stop_list(),
                  bool(body.stream), body.include_usage, body.user, body.engine_sampling(), body.logprobs_k,
                  body.best_of, body.continuous_usage, body.ignored_fields, *body.output_spec, None, body.priority,
                  body=client_body(body))
        job.max_tokens_named = "max_tokens" in body.model_fields_set  # else OpenAI's default of 16
        return job

    @property
    def n(self) -> int:
        return self.sampling.get("n", 1)

    @property
    def generated(self) -> int:
        """Completions the engine makes: best_of when it asks for more than n."""
        return max(self.n, self.best_of or 1)

    @property
    def cacheable(self) -> bool:
        """One plain text answer the semantic cache can hold and replay (not one shaped by a format or tools)."""
        return (self.generated == 1 and self.logprobs is None and not (set(self.sampling) - {"n"})
                and self.structured is None and self.tools is None)

    @property
    def prompt_param(self) -> str:
        return "messages" if self.messages is not None else "prompt"

    def prompt_bytes(self) -> int:
        """UTF-8 bytes of the text the tenant sent (roles and contents, or the prompt)."""
        if self.messages is None:
            return len(self.prompt.encode())
        return sum(len(m["role"].encode()) + len(m["content"].encode()) for m in self.messages)


def client_body(body) -> dict:
    """A parsed request as its JSON body again: the fields the client set (unknown ones included)."""
    return body.model_dump(mode="json", exclude_unset=True)


def _or(value, default):
    return default if value is None else value
