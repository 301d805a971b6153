"""Prompt shapes: the admin API's bodies and answers, and the `prompt` field of a chat request."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

PROMPT_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"  # safe in a URL path and in "name:N"
LABEL_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"


class PromptMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    role: Literal["system", "developer", "user", "assistant"]
    content: str = Field(max_length=200_000)


class PromptVersionBody(BaseModel):
    """POST /admin/prompts/{name}/versions: a new version's content."""
    model_config = ConfigDict(extra="forbid")
    messages: list[PromptMessage] = Field(min_length=1, max_length=256)
    model: str | None = Field(None, min_length=1, max_length=200)
    params: dict[str, Any] = Field(default_factory=dict)  # chat request fields: temperature, max_tokens...


class PromptCreate(PromptVersionBody):
    """POST /admin/prompts. `tenant_id`: the owner, the only tenant whose keys can serve it; absent, the
    prompt is shared by every tenant."""
    name: str = Field(pattern=PROMPT_NAME)
    tenant_id: str | None = Field(None, min_length=1, max_length=36)


class LabelSet(BaseModel):
    """PUT /admin/prompts/{name}/labels/{label}: one version, or a split by weight (percent, summing to 100)."""
    model_config = ConfigDict(extra="forbid")
    version: int | None = Field(None, ge=1)
    weights: dict[str, int] | None = Field(None, min_length=1, max_length=100)


class PromptCreated(BaseModel):
    name: str
    version: int
    tenant_id: str | None = None


class PromptVersionOut(BaseModel):
    version: int
    messages: list[dict[str, str]]
    model: str | None
    params: dict[str, Any]
    variables: list[str]
    created_at: datetime | None


class LabelMoveOut(BaseModel):
    action: str  # "set" | "rollback"
    weights: dict[str, int]
    previous: dict[str, int] | None
    at: datetime


class LabelOut(BaseModel):
    name: str
    label: str
    version: int | None  # the one version, when the label is not split
    weights: dict[str, int]
    previous: dict[str, int] | None  # what a rollback returns to
    revision: int
    updated_at: datetime | None
    history: list[LabelMoveOut] = Field(default_factory=list)  # newest first


class PromptOut(BaseModel):
    name: str
    tenant_id: str | None  # the owner; None: shared
    versions: list[PromptVersionOut]
    labels: dict[str, LabelOut]


class PromptSummary(BaseModel):
    name: str
    tenant_id: str | None  # the owner; None: shared
    latest_version: int
    created_at: datetime | None


class PromptList(BaseModel):
    object: str = "list"
    data: list[PromptSummary]


class PromptField(BaseModel):
    """The chat request's `prompt` (through the SDK's extra_body): a stored prompt to start from."""
    model_config = ConfigDict(extra="forbid", strict=True)
    id: str = Field(min_length=1, max_length=100)
    label: str | None = Field(None, min_length=1, max_length=100)
    version: int | None = Field(None, ge=1, le=2**31 - 1)
    variables: dict[str, str | int | float | bool] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _label_or_version(self) -> PromptField:
        if self.label is not None and self.version is not None:
            raise ValueError("name a label or a version, not both")
        return self

    def texts(self) -> dict[str, str]:
        """Variables as the text substituted (JSON's true/false, not Python's True/False)."""
        return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in self.variables.items()}
