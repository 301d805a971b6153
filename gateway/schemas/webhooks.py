"""Admin API bodies for webhooks. The secret goes in, never out: responses carry its last 4 characters."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway.domain.alert_events import ALL, EVENT_TYPES


def _encodable(text: str) -> bool:
    """False for a lone surrogate (JSON can carry one): the database and the HMAC need real UTF-8."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


class Thresholds(BaseModel):
    """SLO thresholds the webhook's slo.* events compare against."""
    model_config = ConfigDict(extra="forbid")

    error_rate: Annotated[float, Field(gt=0, le=1)] | None = None
    ttft_p99_ms: Annotated[float, Field(gt=0, le=3_600_000)] | None = None


class WebhookCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: Annotated[str, Field(max_length=2000)]
    events: Annotated[list[str], Field(min_length=1, max_length=len(EVENT_TYPES) + 1)]
    secret: Annotated[str, Field(min_length=16, max_length=200)]
    thresholds: Thresholds = Field(default_factory=Thresholds)

    @field_validator("secret")
    @classmethod
    def _printable(cls, secret: str) -> str:
        if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7f for c in secret) or not _encodable(secret):
            raise ValueError("must be printable characters, without whitespace")
        return secret

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not _encodable(url):
            raise ValueError("must be an http(s) URL")
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018  (raises on a port that is not a number)
        except ValueError:
            raise ValueError("must be an http(s) URL") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http(s) URL with a host")
        if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7f for c in url):
            raise ValueError("must not contain whitespace or control characters")
        return url

    @field_validator("events")
    @classmethod
    def _known_events(cls, events: list[str]) -> list[str]:
        unknown = [e for e in events if e not in EVENT_TYPES and e != ALL]
        if unknown:
            raise ValueError(f"unknown event {unknown[0]!r}; known: {', '.join((*EVENT_TYPES, ALL))}")
        return list(dict.fromkeys(events))  # duplicates dropped, order kept


class WebhookOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    object: Literal["webhook"] = "webhook"
    url: str
    events: list[str]
    thresholds: dict
    secret_hint: str  # "…" and the secret's last 4 characters
    created_at: datetime


class WebhookList(BaseModel):
    object: Literal["list"] = "list"
    data: list[WebhookOut]


class WebhookDeleted(BaseModel):
    id: str
    object: Literal["webhook"] = "webhook"
    deleted: bool = True


class DeliveryOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str  # the event id receivers see (x-tollgate-event-id), the same on every retry
    object: Literal["webhook.delivery"] = "webhook.delivery"
    webhook_id: str
    event_type: str
    status: str  # pending | delivered | failed
    attempts: int
    last_error: str | None
    last_status_code: int | None
    next_attempt_at: datetime | None
    created_at: datetime
    delivered_at: datetime | None


class DeliveryList(BaseModel):
    object: Literal["list"] = "list"
    data: list[DeliveryOut]
