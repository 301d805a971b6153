"""OpenAI wire shapes: requests are validated strictly (JSON types, no coercion of "5" to 5).

Unknown top-level fields are rejected (400 naming the field): a typo such as `max_token`
must not silently fall back to a default. Fields the SDK knows but we do not serve are
accepted only at their neutral value (`logprobs: false`, `tools: []`, `presence_penalty: 0`,
`response_format: {"type": "text"}`) and otherwise rejected with a 400 naming the param;
bookkeeping fields (`metadata`, `store`, `service_tier`, `parallel_tool_calls`, `user`)
are accepted and ignored. Nested objects the SDK grows over time (`stream_options`) ignore
unknown keys.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_NEUTRAL: dict[str, tuple[Any, ...]] = {
    # param -> values that mean "feature off"; anything else is a 400
    "frequency_penalty": (None, 0, 0.0),
    "presence_penalty": (None, 0, 0.0),
    "logprobs": (None, False),
    "top_logprobs": (None, 0),
    "logit_bias": (None, {}),
    "tools": (None, []),
    "functions": (None, []),
    "tool_choice": (None, "none", "auto"),
    "function_call": (None, "none", "auto"),
    "echo": (None, False),
    "best_of": (None, 1),
    "suffix": (None, ""),
    "dimensions": (None,),
    "audio": (None,),
    "modalities": (None, ["text"]),
    "prediction": (None,),
}


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="after")
    def _unsupported(self) -> "_Request":
        for name in type(self).model_fields:
            if name in _NEUTRAL and getattr(self, name) not in _NEUTRAL[name]:
                raise UnsupportedParam(name)
        return self


class UnsupportedParam(ValueError):
    def __init__(self, param: str) -> None:
        super().__init__(f"`{param}` is not supported by this server")
        self.param = param


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    include_usage: bool | None = None


class TextPart(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    type: Literal["text"]
    text: str


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[TextPart]
    name: str | None = None

    def text(self) -> str:
        return self.content if isinstance(self.content, str) else "".join(p.text for p in self.content)


class _Sampling(_Request):
    model: str = Field(min_length=1)
    max_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    n: int | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    stop: str | list[str] | None = None
    seed: int | None = None
    user: str | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    logit_bias: dict[str, float] | None = None
    metadata: dict[str, str] | None = None
    store: bool | None = None
    service_tier: str | None = None

    @field_validator("n")
    @classmethod
    def _one(cls, v: int | None) -> int | None:
        if v is not None and v != 1:
            raise ValueError("only n=1 is supported")
        return v

    @field_validator("stop")
    @classmethod
    def _stops(cls, v: str | list[str] | None) -> str | list[str] | None:
        stops = [v] if isinstance(v, str) else v or []
        if len(stops) > 4 or any(not s for s in stops):
            raise ValueError("stop must be a non-empty string or up to 4 non-empty strings")
        return v

    def stop_list(self) -> list[str]:
        return [self.stop] if isinstance(self.stop, str) else list(self.stop or [])

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)


class ChatCompletionRequest(_Sampling):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    logprobs: bool | None = None
    top_logprobs: int | None = None
    tools: list[dict] | None = None
    tool_choice: str | dict | None = None
    parallel_tool_calls: bool | None = None
    functions: list[dict] | None = None
    function_call: str | dict | None = None
    response_format: dict | None = None
    modalities: list[str] | None = None
    audio: dict | None = None
    prediction: dict | None = None
    reasoning_effort: str | None = None

    @field_validator("response_format")
    @classmethod
    def _text_only(cls, v: dict | None) -> dict | None:
        if v is not None and v.get("type") != "text":
            raise UnsupportedParam("response_format")
        return v

    @property
    def token_limit(self) -> int | None:
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens

    def engine_messages(self) -> list[dict]:
        # "developer" is the newer name for "system"; chat templates know only the latter.
        return [{"role": "system" if m.role == "developer" else m.role, "content": m.text()}
                for m in self.messages]


class CompletionRequest(_Sampling):
    prompt: str | list[str]
    max_tokens: int | None = Field(16, ge=1)  # OpenAI's default for completions
    logprobs: int | None = None
    echo: bool | None = None
    best_of: int | None = None
    suffix: str | None = None

    @field_validator("prompt")
    @classmethod
    def _single(cls, v: str | list[str]) -> str | list[str]:
        if isinstance(v, list) and len(v) != 1:
            raise ValueError("exactly one prompt is supported per request")
        return v

    @property
    def token_limit(self) -> int | None:
        return self.max_tokens

    def prompt_text(self) -> str:
        return self.prompt if isinstance(self.prompt, str) else self.prompt[0]


class EmbeddingRequest(_Request):
    model: str = Field(min_length=1)
    input: str | list[str]
    encoding_format: Literal["float", "base64"] | None = None
    dimensions: int | None = None
    user: str | None = None

    @field_validator("input")
    @classmethod
    def _non_empty(cls, v: str | list[str]) -> str | list[str]:
        items = [v] if isinstance(v, str) else v
        if not items or any(not s for s in items):
            raise ValueError("input must be a non-empty string or a non-empty list of non-empty strings")
        if len(items) > 2048:
            raise ValueError("at most 2048 inputs per request")
        return v

    def inputs(self) -> list[str]:
        return [self.input] if isinstance(self.input, str) else list(self.input)


# ---- responses ---------------------------------------------------------------------------


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int = 0
    total_tokens: int
    prompt_tokens_details: dict[str, int] | None = None


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class ChatChoice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: str | None
    logprobs: None = None


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage
    system_fingerprint: str | None = None


class Delta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(BaseModel):
    index: int = 0
    delta: Delta
    finish_reason: str | None = None
    logprobs: None = None


class ChatCompletionChunk(BaseModel):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = None
    system_fingerprint: str | None = None


class CompletionChoice(BaseModel):
    index: int = 0
    text: str
    finish_reason: str | None
    logprobs: None = None


class Completion(BaseModel):
    id: str
    object: Literal["text_completion"] = "text_completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: Usage | None = None
    system_fingerprint: str | None = None


class Embedding(BaseModel):
    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | str


class EmbeddingList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Embedding]
    model: str
    usage: Usage


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "tollgate"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]
