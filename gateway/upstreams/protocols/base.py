"""What a protocol adapter does: build the upstream request from an OpenAI-shaped body, turn its streamed
events back into OpenAI chat.completion(.chunk) dicts, read its errors."""
from __future__ import annotations

from typing import Protocol


class StreamError(Exception):
    """The upstream reported an error inside its stream (an `error` event)."""


class Translator(Protocol):
    finished: bool  # the stream's own end was seen ([DONE], message_stop)

    def feed(self, event: str, data: str) -> list[dict]:
        """One SSE event -> OpenAI chunk dicts; StreamError for an error event."""


class UpstreamProtocol(Protocol):
    def request(self, endpoint: str, body: dict, *, model: str) -> tuple[str, dict]:
        """(path under base_url, JSON body) asking for a stream with usage; ValueError naming the field the
        protocol cannot express (a 400)."""

    def headers(self, api_key: str | None) -> dict[str, str]: ...

    def translator(self, *, model: str) -> Translator: ...

    def error(self, status: int, body: bytes) -> str:
        """The upstream's error message from its error body (may echo what the client sent; never trusted to be
        free of secrets: the backend scrubs it)."""
