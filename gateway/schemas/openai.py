"""OpenAI wire shapes: requests are validated strictly (JSON types, no coercion of "5" to 5).

Unknown top-level fields are ignored, as vLLM's server does (tools written for vLLM send its extension
fields, and other servers' too): the response names them in `x-tollgate-ignored-fields`. vLLM's extension
sampling fields are served (`top_k`, `min_p`, `min_tokens`, `repetition_penalty`, `ignore_eos`,
`stop_token_ids`, `skip_special_tokens`, `include_stop_str_in_output`, `stream_options.continuous_usage_stats`).
Fields the SDK knows but we do not serve are accepted only at their neutral value (`tools: []`,
`logit_bias: {}`, `echo: false`) and otherwise rejected with a 400 naming the param; bookkeeping fields
(`metadata`, `store`, `service_tier`, `parallel_tool_calls`, `user`) are accepted and ignored. Nested
objects the SDK grows over time (`stream_options`) ignore unknown keys.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_N = 16  # completions per request (the engine's bound)
MAX_LOGPROBS = 20  # alternatives per token, as OpenAI's top_logprobs

_NEUTRAL: dict[str, tuple[Any, ...]] = {
    # param -> values that mean "feature off"; anything else is a 400
    "logit_bias": (None, {}),
    "tools": (None, []),
    "functions": (None, []),
    "tool_choice": (None, "none", "auto"),
    "function_call": (None, "none", "auto"),
    "echo": (None, False),
    "suffix": (None, ""),
    "dimensions": (None,),
    "audio": (None,),
    "modalities": (None, ["text"]),
    "prediction": (None,),
}


class _Request(BaseModel):
    # extra="allow": unknown fields are kept aside (model_extra), never used, and reported back.
    model_config = ConfigDict(extra="allow", strict=True)

    @model_validator(mode="after")
    def _unsupported(self) -> "_Request":
        for name in type(self).model_fields:
            if name in _NEUTRAL and getattr(self, name) not in _NEUTRAL[name]:
                raise UnsupportedParam(name)
        return self

    @property
    def ignored_fields(self) -> list[str]:
        """Top-level fields this server does not know, in the order sent."""
        return list(self.model_extra or ())


class UnsupportedParam(ValueError):
    def __init__(self, param: str) -> None:
        super().__init__(f"`{param}` is not supported by this server")
        self.param = param


class ParamError(ValueError):
    """A value that only other fields make wrong: the 400 names `param`."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    include_usage: bool | None = None
    continuous_usage_stats: bool | None = None  # vLLM: usage (so far) on every chunk


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
    n: int | None = Field(None, ge=1, le=MAX_N)
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    stop: str | list[str] | None = None
    seed: int | None = Field(None, ge=-(2**63), lt=2**64)
    user: str | None = None
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    logit_bias: dict[str, float] | None = None
    metadata: dict[str, str] | None = None
    store: bool | None = None
    service_tier: str | None = None
    # vLLM's extension fields (sent through the SDK's extra_body).
    top_k: int | None = Field(None, ge=-1)
    min_p: float | None = Field(None, ge=0, le=1)
    min_tokens: int | None = Field(None, ge=0)
    repetition_penalty: float | None = Field(None, gt=0, le=100)
    ignore_eos: bool | None = None
    stop_token_ids: list[int] | None = Field(None, max_length=64)
    skip_special_tokens: bool | None = None
    include_stop_str_in_output: bool | None = None

    @field_validator("stop_token_ids")
    @classmethod
    def _token_ids(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and any(t < 0 for t in v):
            raise ValueError("stop_token_ids must be non-negative token ids")
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

    @property
    def continuous_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.continuous_usage_stats)

    def engine_sampling(self) -> dict[str, Any]:
        """The engine's sampling fields this request sets (GenerationRequest / SamplingParams names)."""
        fields = {"n": self.n, "presence_penalty": self.presence_penalty, "frequency_penalty": self.frequency_penalty,
                  "top_k": self.top_k, "min_p": self.min_p, "min_tokens": self.min_tokens,
                  "repetition_penalty": self.repetition_penalty, "ignore_eos": self.ignore_eos,
                  "stop_token_ids": self.stop_token_ids, "skip_special_tokens": self.skip_special_tokens,
                  "include_stop_str_in_output": self.include_stop_str_in_output}
        return {k: v for k, v in fields.items() if v is not None}


class ChatCompletionRequest(_Sampling):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    logprobs: bool | None = None
    top_logprobs: int | None = Field(None, ge=0, le=MAX_LOGPROBS)
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

    @model_validator(mode="after")
    def _top_logprobs_need_logprobs(self) -> "ChatCompletionRequest":
        if self.top_logprobs and not self.logprobs:
            raise ParamError("top_logprobs", "top_logprobs requires logprobs: true")
        return self

    @property
    def logprobs_k(self) -> int | None:
        """The engine's logprobs: None (off) or the number of alternatives per token."""
        return (self.top_logprobs or 0) if self.logprobs else None

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
    logprobs: int | None = Field(None, ge=0, le=MAX_LOGPROBS)
    echo: bool | None = None
    best_of: int | None = Field(None, ge=1, le=MAX_N)  # generate this many, return the n most likely
    suffix: str | None = None

    @model_validator(mode="after")
    def _best_of(self) -> "CompletionRequest":
        if self.best_of is not None and self.best_of < (self.n or 1):
            raise ParamError("best_of", "best_of must be at least n")
        if self.best_of is not None and self.best_of > (self.n or 1) and self.stream:
            raise ParamError("best_of", "best_of greater than n cannot be streamed")
        return self

    @property
    def logprobs_k(self) -> int | None:
        return self.logprobs

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


class TopLogprob(BaseModel):
    token: str
    logprob: float
    bytes: list[int] | None = None


class ChatTokenLogprob(TopLogprob):
    top_logprobs: list[TopLogprob]


class ChatLogprobs(BaseModel):
    content: list[ChatTokenLogprob] | None


class CompletionLogprobs(BaseModel):
    tokens: list[str]
    token_logprobs: list[float]
    top_logprobs: list[dict[str, float]] | None
    text_offset: list[int]


class ChatChoice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: str | None
    logprobs: ChatLogprobs | None = None


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
    logprobs: ChatLogprobs | None = None


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
    logprobs: CompletionLogprobs | None = None


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
