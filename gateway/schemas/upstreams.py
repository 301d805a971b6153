"""Admin shapes for external upstreams (GET /admin/upstreams, PUT /admin/upstreams/{name}). A key goes in and
never comes out: the view says only whether one is set."""
from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator


class UpstreamUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    base_url: Annotated[str, Field(max_length=2000)] | None = None
    api_key: Annotated[SecretStr, Field(min_length=1, max_length=4096)] | None = None
    timeout_s: Annotated[float, Field(gt=0, le=3600)] | None = None

    @field_validator("base_url")
    @classmethod
    def _http(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return v.rstrip("/") if v is not None else v

    @model_validator(mode="after")
    def _something(self) -> UpstreamUpdate:
        if self.base_url is None and self.api_key is None and self.timeout_s is None:
            raise ValueError("set at least one of base_url, api_key, timeout_s")
        return self


class UpstreamView(BaseModel):
    object: str = "upstream"
    name: str
    protocol: str
    base_url: str
    timeout_s: float
    has_api_key: bool
    healthy: bool
    circuit: str  # "closed" | "open" | "half_open"
    in_flight: int
    last_error: str | None = None
    models: list[str]  # the catalogue versions it serves
