"""OpenAI's protocol (vLLM, llama.cpp, SGLang, OpenAI, DeepSeek...): the body passes through, asking for a
stream with usage; the chunks are already the package's currency."""
from __future__ import annotations

import json

from gateway.upstreams.protocols.base import StreamError

PATHS = {"/v1/chat/completions": "/chat/completions", "/v1/completions": "/completions"}


class OpenAITranslator:
    def __init__(self) -> None:
        self.finished = False

    def feed(self, event: str, data: str) -> list[dict]:
        if data.strip() == "[DONE]":
            self.finished = True
            return []
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as e:
            raise StreamError(f"the upstream sent an event that is not JSON ({e.msg})") from None
        if not isinstance(chunk, dict):
            raise StreamError("the upstream sent an event that is not a JSON object")
        if chunk.get("error") is not None:
            err = chunk["error"]
            raise StreamError(str(err.get("message") if isinstance(err, dict) else err))
        return [chunk]


class OpenAIProtocol:
    def request(self, endpoint: str, body: dict, *, model: str) -> tuple[str, dict]:
        try:
            path = PATHS[endpoint]
        except KeyError:
            raise ValueError(f"{endpoint} is not served by this model's upstream") from None
        return path, {**body, "model": model, "stream": True, "stream_options": {"include_usage": True}}

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def translator(self, *, model: str) -> OpenAITranslator:
        return OpenAITranslator()

    def error(self, status: int, body: bytes) -> str:
        try:
            err = json.loads(body).get("error")
            message = err.get("message") if isinstance(err, dict) else err
        except (ValueError, AttributeError):
            message = None
        return str(message or body[:300].decode(errors="replace") or f"HTTP {status}")
