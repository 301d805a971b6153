"""Anthropic's Messages protocol: OpenAI chat bodies out, Messages events back as OpenAI chunks, through the
translation module (gateway/upstreams/anthropic_wire.py). The base_url is the host root; chat only."""
from __future__ import annotations

import json

from gateway.upstreams.anthropic_wire import StreamTranslator, UpstreamStreamError, error_from, to_messages_request
from gateway.upstreams.protocols.base import StreamError

API_VERSION = "2023-06-01"


class AnthropicTranslator:
    def __init__(self, *, model: str) -> None:
        self._inner = StreamTranslator(model=model, include_usage=True)

    @property
    def finished(self) -> bool:
        return self._inner.finished

    def feed(self, event: str, data: str) -> list[dict]:
        try:
            payload = json.loads(data)
        except json.JSONDecodeError as e:
            raise StreamError(f"the upstream sent an event that is not JSON ({e.msg})") from None
        if not isinstance(payload, dict):
            raise StreamError("the upstream sent an event that is not a JSON object")
        try:
            return self._inner.feed(event, payload)
        except UpstreamStreamError as e:
            raise StreamError(f"{e.type}: {e.message}") from None


class AnthropicProtocol:
    def request(self, endpoint: str, body: dict, *, model: str) -> tuple[str, dict]:
        if endpoint != "/v1/chat/completions":
            raise ValueError("prompt: this model's upstream (Anthropic Messages) serves chat only; "
                             "use /v1/chat/completions")
        return "/v1/messages", to_messages_request({**body, "stream": True}, model=model)

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"anthropic-version": API_VERSION, **({"x-api-key": api_key} if api_key else {})}

    def translator(self, *, model: str) -> AnthropicTranslator:
        return AnthropicTranslator(model=model)

    def error(self, status: int, body: bytes) -> str:
        kind, message = error_from(status, body)
        return f"{kind}: {message}"
