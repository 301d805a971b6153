"""Anthropic Messages API wire shapes (POST /v1/messages, /v1/messages/count_tokens): requests validated
strictly, as the OpenAI ones are; responses and stream events as the official SDK parses them.

Unknown top-level fields are ignored and named back in `x-tollgate-ignored-fields` (the SDK grows fields over
time: `service_tier`, `container`, `mcp_servers`). Content blocks are validated by type: `text`, `tool_use`
and `tool_result` are served; `image` and `document` are refused with a 400 naming the block (no catalogue
model reads them); `thinking` blocks an assistant turn carries back are dropped (no model here thinks aloud).
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from gateway.schemas.openai import MAX_TOOLS, NAME, ParamError

MAX_STOP_SEQUENCES = 4  # the engine's bound on stop strings, as chat's `stop`


def _str_or_list(v: Any) -> str:
    return "str" if isinstance(v, str) else "list"


def _text_or(blocks: Any) -> Any:
    """A string, or a list of blocks: a list's mistakes are reported as the list's, not as "not a string"."""
    return Annotated[Annotated[str, Tag("str")] | Annotated[blocks, Tag("list")], Discriminator(_str_or_list)]


def _blocks(*kinds: type[_Block]) -> Any:
    """One block of `kinds`, picked by its `type`. The union's members are tagged by class name, so a mistake
    inside a block names its field alone ("messages.0.content.1.text"), not the tag too."""
    by_type = {t: k.__name__ for k in kinds for t in k.model_fields["type"].annotation.__args__}

    def tag(v: Any) -> str | None:
        kind = v.get("type") if isinstance(v, dict) else None
        return by_type.get(kind) if isinstance(kind, str) else None

    expected = ", ".join(by_type)
    return Annotated[Union[tuple(Annotated[k, Tag(k.__name__)] for k in kinds)],  # noqa: UP007 (built at run time)
                     Discriminator(tag, custom_error_type="block_type",
                                   custom_error_message=f"a content block's type must be one of: {expected}")]


class _Block(BaseModel):
    # cache_control and citations are accepted and ignored: the engine's prefix cache needs no markers.
    model_config = ConfigDict(extra="ignore", strict=True)


class TextBlockParam(_Block):
    type: Literal["text"]
    text: str


class ImageBlockParam(_Block):
    type: Literal["image"]
    source: dict


class DocumentBlockParam(_Block):
    type: Literal["document"]
    source: dict


class ThinkingBlockParam(_Block):
    type: Literal["thinking", "redacted_thinking"]


class ToolUseBlockParam(_Block):
    type: Literal["tool_use"]
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    input: dict


class ToolResultBlockParam(_Block):
    type: Literal["tool_result"]
    tool_use_id: str = Field(min_length=1)
    content: _text_or(list[_blocks(TextBlockParam, ImageBlockParam)]) | None = None
    is_error: bool | None = None


ContentBlockParam = _blocks(TextBlockParam, ImageBlockParam, DocumentBlockParam, ThinkingBlockParam,
                            ToolUseBlockParam, ToolResultBlockParam)


class MessageParam(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    role: Literal["user", "assistant"]
    content: _text_or(list[ContentBlockParam])


class ToolParam(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    # Anthropic's server tools (web_search, bash, ...) carry their own type: only client tools are served.
    type: Literal["custom"] | None = None
    name: str = Field(pattern=NAME)
    description: str | None = None
    input_schema: dict


class ToolChoice(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None

    @model_validator(mode="after")
    def _named(self) -> ToolChoice:
        if (self.type == "tool") != (self.name is not None):
            raise ValueError("a name goes with type 'tool', and only with it")
        return self


class Metadata(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    user_id: str | None = Field(None, max_length=256)


class ThinkingConfig(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    type: Literal["enabled", "disabled", "adaptive"]


class _Prompt(BaseModel):
    """What both routes read: the model, the conversation, the system prompt and the tools."""
    model_config = ConfigDict(extra="allow", strict=True)
    model: str = Field(min_length=1)
    messages: list[MessageParam] = Field(min_length=1)
    system: _text_or(list[TextBlockParam]) | None = None
    tools: list[ToolParam] | None = Field(None, max_length=MAX_TOOLS)
    tool_choice: ToolChoice | None = None
    thinking: ThinkingConfig | None = None

    @field_validator("tools")
    @classmethod
    def _distinct_names(cls, v: list[ToolParam] | None) -> list[ToolParam] | None:
        names = [t.name for t in v or []]
        if len(set(names)) != len(names):
            raise ValueError("tools must have distinct names")
        return v

    @model_validator(mode="after")
    def _choice_and_thinking(self) -> _Prompt:
        if self.tool_choice is not None and self.tool_choice.type != "none" and not self.tools:
            raise ParamError("tool_choice", "tool_choice needs tools")
        if self.tool_choice is not None and self.tool_choice.type == "tool" \
                and self.tool_choice.name not in {t.name for t in self.tools or []}:
            raise ParamError("tool_choice", f"tool_choice names tool '{self.tool_choice.name[:64]}', "
                                            "which is not in tools")
        if self.thinking is not None and self.thinking.type != "disabled":
            raise ParamError("thinking", "extended thinking is not supported by this server")
        return self

    @property
    def ignored_fields(self) -> list[str]:
        return list(self.model_extra or ())

    def system_text(self) -> str | None:
        if self.system is None or isinstance(self.system, str):
            return self.system or None
        return "\n\n".join(b.text for b in self.system) or None


class MessagesRequest(_Prompt):
    max_tokens: int = Field(ge=1)
    stop_sequences: list[str] | None = Field(None, max_length=MAX_STOP_SEQUENCES)
    stream: bool | None = None
    temperature: float | None = Field(None, ge=0, le=1)
    top_p: float | None = Field(None, gt=0, le=1)
    top_k: int | None = Field(None, ge=0)
    metadata: Metadata | None = None
    service_tier: str | None = None  # accepted and ignored: one tier here

    @field_validator("stop_sequences")
    @classmethod
    def _stops(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and any(not s for s in v):
            raise ValueError("stop sequences must be non-empty strings")
        return v


class CountTokensRequest(_Prompt):
    pass


# ---- responses ---------------------------------------------------------------------------


class TextBlock(BaseModel):
    type: Literal["text"] = "text"
    text: str


class ToolUseBlock(BaseModel):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]


class MessageUsage(BaseModel):
    """Anthropic counts the prompt in parts: input_tokens are the ones read fresh, cache_read_input_tokens the
    ones the engine's prefix cache (or the semantic cache) served; together they are the billed prompt."""
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use"]


class Message(BaseModel):
    id: str
    type: Literal["message"] = "message"
    role: Literal["assistant"] = "assistant"
    content: list[TextBlock | ToolUseBlock]
    model: str
    stop_reason: StopReason | None
    stop_sequence: str | None = None
    usage: MessageUsage


class TokenCount(BaseModel):
    input_tokens: int


ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
               403: "permission_error", 404: "not_found_error", 413: "request_too_large",
               429: "rate_limit_error", 500: "api_error", 503: "overloaded_error", 504: "timeout_error",
               529: "overloaded_error"}


def error_type(status: int) -> str:
    return ERROR_TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")


def error_body(status: int, message: str) -> dict:
    """Anthropic's error shape, for an HTTP status."""
    return {"type": "error", "error": {"type": error_type(status), "message": message}}
