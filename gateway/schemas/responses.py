"""The Responses API's wire shapes (POST /v1/responses): the request, validated strictly, and the Response object.

Text in, text out. Input is a string or a list of message items (`user`, `system`, `developer`, `assistant`;
content a string or `input_text` / `output_text` parts); anything else in it (images, files, tool calls,
reasoning items, item references) is a 400 naming the item. Fields the SDK knows that would change what the
model does and we cannot serve are accepted only at their neutral value (`tools: []`, `text.format` text,
`truncation: "disabled"`, ...) and otherwise refused with a 400 naming the param; bookkeeping fields
(`metadata`, `user`, `service_tier`, `safety_identifier`, `prompt_cache_key`, ...) are accepted. Unknown
top-level fields are ignored and named back in `x-tollgate-ignored-fields`, as on the chat endpoint.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from gateway.schemas.openai import ParamError, UnsupportedParam, _Request

ROLES = ("user", "system", "developer", "assistant")
TEXT_PARTS = ("input_text", "output_text")
# include values that ask for nothing this server could have made (no reasoning happens here).
HARMLESS_INCLUDES = ("reasoning.encrypted_content",)
MAX_METADATA_PAIRS, MAX_METADATA_KEY, MAX_METADATA_VALUE = 16, 64, 512  # OpenAI's bounds

_NEUTRAL: dict[str, tuple[Any, ...]] = {
    # param -> values that mean "feature off"; anything else is a 400
    "tools": (None, []),
    "tool_choice": (None, "none", "auto"),
    "truncation": (None, "disabled"),
    "background": (None, False),
    "top_logprobs": (None, 0),
    "prompt": (None,),
    "conversation": (None,),
}


class ResponseCreateRequest(_Request):
    model: str = Field(min_length=1)
    input: str | list[Any]
    instructions: str | None = None
    previous_response_id: str | None = None
    max_output_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    stream: bool | None = None
    stream_options: dict[str, Any] | None = None  # include_obfuscation: there is no obfuscation to turn off
    store: bool | None = None
    metadata: dict[str, str] | None = None
    user: str | None = Field(None, max_length=512)
    safety_identifier: str | None = Field(None, max_length=512)
    prompt_cache_key: str | None = Field(None, max_length=512)
    prompt_cache_retention: str | None = None
    service_tier: str | None = None
    parallel_tool_calls: bool | None = None
    max_tool_calls: int | None = Field(None, ge=0)
    tools: list[Any] | None = None
    tool_choice: str | dict[str, Any] | None = None
    text: dict[str, Any] | None = None
    reasoning: dict[str, Any] | None = None
    truncation: str | None = None
    background: bool | None = None
    include: list[str] | None = None
    top_logprobs: int | None = Field(None, ge=0, le=20)
    prompt: dict[str, Any] | None = None
    conversation: str | dict[str, Any] | None = None

    @model_validator(mode="after")
    def _neutral(self) -> ResponseCreateRequest:
        for name, neutral in _NEUTRAL.items():
            if getattr(self, name) not in neutral:
                raise UnsupportedParam(name)
        return self

    @field_validator("input", mode="before")
    @classmethod
    def _messages(cls, v: Any) -> Any:
        if not isinstance(v, str) and not (isinstance(v, list) and v):
            raise ParamError("input", "must be a string or a non-empty list of message items")
        for i, item in enumerate(v if isinstance(v, list) else []):
            _check_item(i, item)
        return v

    @field_validator("text")
    @classmethod
    def _plain_text(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        fmt = (v or {}).get("format")
        if fmt is not None and (not isinstance(fmt, dict) or fmt.get("type") != "text"):
            raise UnsupportedParam("text.format")
        if (v or {}).get("verbosity") not in (None, "medium"):
            raise UnsupportedParam("text.verbosity")
        return v

    @field_validator("reasoning")
    @classmethod
    def _no_reasoning(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        # {"effort": null, "summary": null} (what the SDK echoes back) asks for nothing.
        for key, value in (v or {}).items():
            if value is not None:
                raise UnsupportedParam(f"reasoning.{key}")
        return v

    @field_validator("include")
    @classmethod
    def _includes(cls, v: list[str] | None) -> list[str] | None:
        for value in v or []:
            if value not in HARMLESS_INCLUDES:
                raise UnsupportedParam("include")
        return v

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        if v is not None and (len(v) > MAX_METADATA_PAIRS or any(len(k) > MAX_METADATA_KEY for k in v)
                              or any(len(s) > MAX_METADATA_VALUE for s in v.values())):
            raise ParamError("metadata", f"at most {MAX_METADATA_PAIRS} pairs, keys up to {MAX_METADATA_KEY} "
                                         f"and values up to {MAX_METADATA_VALUE} characters")
        return v

    def input_messages(self) -> list[dict[str, str]]:
        """The input as plain {"role", "content"} messages (roles as sent)."""
        if isinstance(self.input, str):
            return [{"role": "user", "content": self.input}]
        return [{"role": item["role"], "content": _text_of(item["content"])} for item in self.input]


def _check_item(i: int, item: Any) -> None:
    """A message item: {"role", "content": str | [text parts]} (with "type": "message" optional). OpenAI's
    output messages, sent back as input, carry id, status and phase too: those are ignored."""
    where = f"input[{i}]"
    if not isinstance(item, dict):
        raise ParamError(where, "must be a message object")
    kind = item.get("type", "message")
    if kind != "message":
        raise UnsupportedParam(f"{where}.type") if isinstance(kind, str) else ParamError(
            f"{where}.type", "must be a string")
    if item.get("role") not in ROLES:
        raise ParamError(f"{where}.role", f"must be one of {', '.join(ROLES)}")
    content = item.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise ParamError(f"{where}.content", "must be a string or a list of text parts")
    for j, part in enumerate(content):
        at = f"{where}.content[{j}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in TEXT_PARTS:
            if isinstance(kind, str):
                raise UnsupportedParam(f"{at}.type")
            raise ParamError(at, "must be an input_text or output_text part")
        if not isinstance(part.get("text"), str):
            raise ParamError(f"{at}.text", "must be a string")


def _text_of(content: str | list[dict[str, Any]]) -> str:
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


# ---- the Response object --------------------------------------------------------------------------


class OutputText(BaseModel):
    type: Literal["output_text"] = "output_text"
    text: str
    annotations: list[Any] = Field(default_factory=list)
    logprobs: list[Any] = Field(default_factory=list)


class OutputMessage(BaseModel):
    type: Literal["message"] = "message"
    id: str
    status: Literal["in_progress", "completed", "incomplete"]
    role: Literal["assistant"] = "assistant"
    content: list[OutputText]


class ResponseUsage(BaseModel):
    input_tokens: int
    input_tokens_details: dict[str, int]
    output_tokens: int
    output_tokens_details: dict[str, int]
    total_tokens: int


class IncompleteDetails(BaseModel):
    reason: Literal["max_output_tokens", "content_filter"]


class ResponseError(BaseModel):
    code: str
    message: str


class ResponseObject(BaseModel):
    """What POST returns, GET reads back and each lifecycle event of a stream carries."""
    id: str
    object: Literal["response"] = "response"
    created_at: int
    status: Literal["in_progress", "completed", "incomplete", "failed"]
    completed_at: int | None = None
    error: ResponseError | None = None
    incomplete_details: IncompleteDetails | None = None
    instructions: str | None = None
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    model: str
    output: list[OutputMessage]
    parallel_tool_calls: bool = True
    previous_response_id: str | None = None
    prompt_cache_key: str | None = None
    reasoning: dict[str, Any] = Field(default_factory=lambda: {"effort": None, "summary": None})
    safety_identifier: str | None = None
    service_tier: str = "default"
    store: bool = True
    temperature: float = 1.0
    text: dict[str, Any] = Field(default_factory=lambda: {"format": {"type": "text"}})
    tool_choice: str = "auto"
    tools: list[Any] = Field(default_factory=list)
    top_logprobs: int = 0
    top_p: float = 1.0
    truncation: Literal["disabled"] = "disabled"
    background: bool = False
    usage: ResponseUsage | None = None
    user: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)

    @property
    def output_text(self) -> str:
        return "".join(part.text for item in self.output for part in item.content)


class DeletedResponse(BaseModel):
    id: str
    object: Literal["response.deleted"] = "response.deleted"
    deleted: bool = True


def echo(body: ResponseCreateRequest) -> dict[str, Any]:
    """The request fields a Response object repeats back."""
    return {"instructions": body.instructions, "max_output_tokens": body.max_output_tokens,
            "max_tool_calls": body.max_tool_calls, "previous_response_id": body.previous_response_id,
            "prompt_cache_key": body.prompt_cache_key, "safety_identifier": body.safety_identifier,
            "store": body.store is not False, "temperature": 1.0 if body.temperature is None else body.temperature,
            "top_p": 1.0 if body.top_p is None else body.top_p, "user": body.user,
            "tool_choice": body.tool_choice or "auto", "metadata": body.metadata or {},
            "parallel_tool_calls": body.parallel_tool_calls is not False}
