"""OpenAI wire shapes: requests are validated strictly (JSON types, no coercion of "5" to 5).

Unknown top-level fields are ignored, as vLLM's server does (tools written for vLLM send its extension
fields, and other servers' too): the response names them in `x-tollgate-ignored-fields`. vLLM's extension
sampling fields are served (`top_k`, `min_p`, `min_tokens`, `repetition_penalty`, `ignore_eos`,
`stop_token_ids`, `skip_special_tokens`, `include_stop_str_in_output`, `stream_options.continuous_usage_stats`).
Structured output (`response_format` json_object / json_schema, and vLLM's `structured_outputs`) and tool
calls (`tools`, `tool_choice`) are served: gateway/tools turns them into the engine's grammar and prompt.
Fields the SDK knows but we do not serve are accepted only at their neutral value (`functions: []`,
`logit_bias: {}`, `echo: false`) and otherwise rejected with a 400 naming the param; bookkeeping fields
(`metadata`, `store`, `service_tier`, `parallel_tool_calls`, `user`) are accepted and ignored. Nested
objects the SDK grows over time (`stream_options`) ignore unknown keys.
"""
from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_serializer, model_validator

from gateway.tools.grammar import tool_grammar
from gateway.schemas.prompts import PromptField
from gateway.tools.prompt import call_text, result_text, with_tools
from gateway.tools.spec import Function, ToolSet

MAX_N = 16  # completions per request (the engine's bound)
MAX_LOGPROBS = 20  # alternatives per token, as OpenAI's top_logprobs
MAX_TOOLS = 128  # functions per request, as OpenAI's
MAX_STOPS = 4  # stop strings per request, as OpenAI's
MAX_STOP_CHARS = 1024  # characters per stop string: the engine looks for each in every step's new text
NAME = r"^[A-Za-z0-9_-]{1,64}$"  # a function's or a schema's name, as OpenAI allows them

_NEUTRAL: dict[str, tuple[Any, ...]] = {
    # param -> values that mean "feature off"; anything else is a 400
    "logit_bias": (None, {}),
    "functions": (None, []),
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
    def _unsupported(self) -> _Request:
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


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    name: str
    arguments: str  # a JSON object, as a string


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None  # an assistant's earlier calls
    tool_call_id: str | None = None  # the call a tool message answers

    @model_validator(mode="after")
    def _shape(self) -> ChatMessage:
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only assistant messages carry tool_calls")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id it answers")
        if self.content is None and not (self.role == "assistant" and self.tool_calls):
            raise ValueError(f"a {self.role} message needs content")
        return self

    def text(self) -> str:
        if self.content is None:
            return ""
        return self.content if isinstance(self.content, str) else "".join(p.text for p in self.content)

    def engine_message(self) -> dict[str, str]:
        """As every chat template reads it: "developer" is the newer name for "system"; a tool's result is a
        user turn, and an assistant's calls the text it wrote for them (gateway/tools/prompt.py)."""
        if self.role == "tool":
            return {"role": "user", "content": result_text(self.text())}
        if self.tool_calls:
            calls = [{"name": c.function.name, "arguments": c.function.arguments} for c in self.tool_calls]
            return {"role": "assistant", "content": self.text() + call_text(calls)}
        return {"role": "system" if self.role == "developer" else self.role, "content": self.text()}


class FunctionDefinition(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    name: str = Field(pattern=NAME)
    description: str | None = None
    parameters: dict | None = None  # a JSON Schema for the arguments object
    strict: bool | None = None  # always enforced when a call is forced; the schema as given otherwise


class ToolDefinition(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    type: Literal["function"]
    function: FunctionDefinition


class FunctionName(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    name: str


class NamedToolChoice(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    type: Literal["function"]
    function: FunctionName


class JsonSchemaFormat(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, populate_by_name=True)
    name: str = Field(pattern=NAME)
    description: str | None = None
    schema_: dict | None = Field(None, alias="schema")
    strict: bool | None = None  # the schema is always enforced


class ResponseFormat(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None

    @model_validator(mode="after")
    def _schema_with_its_type(self) -> ResponseFormat:
        if self.type == "json_schema" and self.json_schema is None:
            raise ValueError("type json_schema needs json_schema: {name, schema}")
        return self

    def answer_schema(self) -> dict | None:
        """The JSON Schema the answer must match; None for free text."""
        if self.type == "json_object":
            return {"type": "object"}
        if self.type == "json_schema":
            return self.json_schema.schema_ or {}
        return None


class StructuredOutputs(BaseModel):
    """vLLM's extension field (through extra_body): exactly one constraint."""
    model_config = ConfigDict(extra="ignore", strict=True)
    json_: dict | str | None = Field(None, alias="json")
    regex: str | None = Field(None, min_length=1)
    choice: list[str] | None = Field(None, min_length=1, max_length=1024)
    grammar: str | None = Field(None, min_length=1)
    json_object: bool | None = None

    @model_validator(mode="after")
    def _one(self) -> StructuredOutputs:
        given = [k for k in ("json_", "regex", "choice", "grammar") if getattr(self, k) is not None]
        given += ["json_object"] if self.json_object else []
        if len(given) != 1:
            raise ValueError("give exactly one of json, regex, choice, grammar, json_object")
        if self.choice is not None and any(not c for c in self.choice):
            raise ValueError("choice must be non-empty strings")
        return self

    @property
    def given(self) -> str:
        """The field that holds the constraint, as sent ("json", "regex", "choice", "grammar", "json_object")."""
        return next((k.rstrip("_") for k in ("json_", "regex", "choice", "grammar") if getattr(self, k) is not None),
                    "json_object")

    def engine_spec(self) -> dict:
        if self.json_ is not None:
            try:
                schema = json.loads(self.json_) if isinstance(self.json_, str) else self.json_
            except ValueError as e:
                raise ParamError("structured_outputs", f"structured_outputs.json is not JSON: {e}") from None
            if not isinstance(schema, dict):
                raise ParamError("structured_outputs", "structured_outputs.json must be a JSON Schema object")
            return {"kind": "json_schema", "value": schema}
        if self.regex is not None:
            return {"kind": "regex", "value": self.regex}
        if self.grammar is not None:
            return {"kind": "grammar", "value": self.grammar}
        if self.choice is not None:  # one of the strings, as a grammar of literal alternatives
            return {"kind": "grammar", "value": "start: " + " | ".join(json.dumps(c) for c in self.choice)}
        return {"kind": "json_object", "value": None}


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
    speculative: bool | None = None  # false: this request never drafts (where the model speculates)
    priority: int | None = Field(None, ge=-1000, le=1000)  # vLLM's: lower runs earlier (never below the plan's)
    response_format: ResponseFormat | None = None  # OpenAI's on chat; vLLM takes it on completions too
    structured_outputs: StructuredOutputs | None = None  # vLLM's
    # (the engine's `structured` spec or None, the param that asked for it), set once validated
    _output: tuple[dict | None, str | None] = PrivateAttr((None, None))

    @model_validator(mode="after")
    def _output_format(self) -> _Sampling:
        self._output = self._structured()
        return self

    @property
    def output_spec(self) -> tuple[dict | None, str | None]:
        """(the engine's `structured` spec, the param that asked for it): what the output must match."""
        return self._output

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
        if len(stops) > MAX_STOPS or any(not s for s in stops):
            raise ValueError(f"stop must be a non-empty string or up to {MAX_STOPS} non-empty strings")
        longest = max(map(len, stops), default=0)
        if longest > MAX_STOP_CHARS:
            raise ValueError(f"each stop string may be at most {MAX_STOP_CHARS} characters (one has {longest})")
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
                  "include_stop_str_in_output": self.include_stop_str_in_output, "speculative": self.speculative}
        return {k: v for k, v in fields.items() if v is not None}

    def _structured(self) -> tuple[dict | None, str | None]:
        if self.structured_outputs is not None:
            if self.response_format is not None and self.response_format.type != "text":
                raise ParamError("structured_outputs", "give response_format or structured_outputs, not both")
            # A compile refusal (gateway.api.v1.pipeline.generate) names the field: "structured_outputs.regex".
            return self.structured_outputs.engine_spec(), f"structured_outputs.{self.structured_outputs.given}"
        schema = self.response_format.answer_schema() if self.response_format else None
        if schema is None:
            return None, None
        if self.response_format.type == "json_object":
            return {"kind": "json_object", "value": None}, "response_format"
        return {"kind": "json_schema", "value": schema}, "response_format"


class ChatCompletionRequest(_Sampling):
    # With a stored `prompt`, the model and messages may come from it (gateway/api/v1/prompted.py).
    model_config = ConfigDict(extra="allow", strict=True, json_schema_extra={
        "anyOf": [{"required": ["model", "messages"]}, {"required": ["prompt"]}]})
    model: str | None = Field(None, min_length=1)
    messages: list[ChatMessage] = Field(default_factory=list)
    prompt: PromptField | None = None
    max_completion_tokens: int | None = Field(None, ge=1)
    logprobs: bool | None = None
    top_logprobs: int | None = Field(None, ge=0, le=MAX_LOGPROBS)
    tools: list[ToolDefinition] | None = Field(None, max_length=MAX_TOOLS)
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    functions: list[dict] | None = None
    function_call: str | dict | None = None
    modalities: list[str] | None = None
    audio: dict | None = None
    prediction: dict | None = None
    reasoning_effort: str | None = None
    _tools: ToolSet | None = PrivateAttr(None)

    @field_validator("tools")
    @classmethod
    def _distinct_names(cls, v: list[ToolDefinition] | None) -> list[ToolDefinition] | None:
        names = [t.function.name for t in v or []]
        if len(set(names)) != len(names):
            raise ValueError("tools must have distinct function names")
        return v

    @model_validator(mode="after")
    def _tools_and_format(self) -> ChatCompletionRequest:
        self._tools = self._tool_set()
        answer = self.response_format.answer_schema() if self.response_format else None
        if self._tools is not None and self._tools.offered:
            if self.structured_outputs is not None:
                raise ParamError("structured_outputs", "structured_outputs cannot be combined with tools; "
                                                       "use response_format")
            grammar = tool_grammar(self._tools, answer)
            self._output = ({"kind": "grammar", "value": grammar}, "tools") if grammar else self._structured()
        return self

    @property
    def tool_set(self) -> ToolSet | None:
        """The tools and the rule for them; None when the request offers none."""
        return self._tools

    def _tool_set(self) -> ToolSet | None:
        if not self.tools:
            if self.tool_choice not in (None, "none"):
                raise ParamError("tool_choice", "tool_choice needs tools")
            return None
        functions = tuple(Function(t.function.name, t.function.description, t.function.parameters or {"type": "object"})
                          for t in self.tools)
        if isinstance(self.tool_choice, NamedToolChoice):
            name = self.tool_choice.function.name
            if name not in {f.name for f in functions}:
                raise ParamError("tool_choice", f"tool_choice names function '{name[:64]}', which is not in tools")
            return ToolSet(functions, "function", name)
        return ToolSet(functions, self.tool_choice or "auto")

    @model_validator(mode="after")
    def _model_and_messages(self) -> ChatCompletionRequest:
        if self.prompt is not None:
            return self
        if self.model is None:
            raise ParamError("model", "Field required")
        if "messages" not in self.model_fields_set:
            raise ParamError("messages", "Field required")
        if not self.messages:
            raise ParamError("messages", "List should have at least 1 item after validation")
        return self

    @model_validator(mode="after")
    def _top_logprobs_need_logprobs(self) -> ChatCompletionRequest:
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

    def engine_messages(self, tools: ToolSet | None = None) -> list[dict]:
        return with_tools([m.engine_message() for m in self.messages], tools)


class CompletionRequest(_Sampling):
    prompt: str | list[str]
    max_tokens: int | None = Field(16, ge=1)  # OpenAI's default for completions
    logprobs: int | None = Field(None, ge=0, le=MAX_LOGPROBS)
    echo: bool | None = None
    best_of: int | None = Field(None, ge=1, le=MAX_N)  # generate this many, return the n most likely
    suffix: str | None = None

    @model_validator(mode="after")
    def _best_of(self) -> CompletionRequest:
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


def _without_absent_tool_calls(handler, value) -> dict:
    out = handler(value)
    if out.get("tool_calls") is None:
        out.pop("tool_calls", None)
    return out


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: list[ToolCall] | None = None  # absent from the JSON unless the model called tools

    @model_serializer(mode="wrap")
    def _serialize(self, handler) -> dict:
        return _without_absent_tool_calls(handler, self)


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


class FunctionCallDelta(BaseModel):
    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(BaseModel):
    index: int  # the call's place among this choice's calls
    id: str | None = None
    type: Literal["function"] | None = None
    function: FunctionCallDelta


class Delta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None  # absent from the JSON unless the model called tools

    @model_serializer(mode="wrap")
    def _serialize(self, handler) -> dict:
        return _without_absent_tool_calls(handler, self)


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
