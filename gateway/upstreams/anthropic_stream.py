"""Anthropic Messages stream events -> OpenAI chat.completion.chunk dicts, as they arrive."""
from __future__ import annotations

import time

from gateway.upstreams.anthropic_response import chat_id, finish_reason, redact, usage_from


class UpstreamStreamError(Exception):
    """An `error` event in an upstream's stream (e.g. overloaded_error mid-answer)."""

    def __init__(self, type: str, message: str) -> None:
        super().__init__(f"{type}: {message}")
        self.type = type
        self.message = message


class StreamTranslator:
    """Feed it one Anthropic SSE event at a time; it returns the OpenAI chunks that event yields."""

    def __init__(self, *, model: str, include_usage: bool = True) -> None:
        self.model = model
        self.include_usage = include_usage
        self.finished = False  # message_stop seen
        self._id = chat_id(None)
        self._created = int(time.time())
        self._usage: dict = {}
        self._tools: dict[int, int] = {}  # content block index -> tool call index (0.. over tool calls only)
        self._arguments_sent: set[int] = set()  # tool call indexes that have had a non-empty arguments fragment
        self._finish_sent = False
        self._handlers = {"message_start": self._message_start, "content_block_start": self._block_start,
                          "content_block_delta": self._block_delta, "content_block_stop": self._block_stop,
                          "message_delta": self._message_delta, "message_stop": self._message_stop,
                          "error": self._error}

    def feed(self, event: str, data: dict) -> list[dict]:
        """The chunks one event yields (ping and event types this version does not know yield none). An event
        without a name of its own (SSE's default "message") is known by its data's `type`."""
        handler = self._handlers.get(event) or self._handlers.get(data.get("type"))
        return handler(data) if handler else []

    @property
    def usage(self) -> dict:
        """The usage so far, in OpenAI's shape (output tokens as last reported: Anthropic's are cumulative)."""
        return usage_from(self._usage)

    def _chunk(self, delta: dict, finish: str | None = None) -> dict:
        chunk = {"id": self._id, "object": "chat.completion.chunk", "created": self._created, "model": self.model,
                 "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        if self.include_usage:
            chunk["usage"] = None
        return chunk

    def _take_usage(self, usage: dict | None) -> None:
        # Every count Anthropic reports is the running total: keep the latest, never add. The prompt-side counts
        # come with message_start; a later event that reports them as 0 or null does not erase them.
        for key, value in (usage or {}).items():
            if isinstance(value, int) and (value > 0 or key == "output_tokens" or key not in self._usage):
                self._usage[key] = value

    def _message_start(self, data: dict) -> list[dict]:
        message = data.get("message") or {}
        self._id = chat_id(message.get("id"))
        self._take_usage(message.get("usage"))
        return [self._chunk({"role": "assistant", "content": ""})]

    def _block_start(self, data: dict) -> list[dict]:
        block = data.get("content_block") or {}
        if block.get("type") == "text":
            return [self._chunk({"content": block["text"]})] if block.get("text") else []
        if block.get("type") != "tool_use":
            return []  # thinking and server-side blocks have no chat.completions counterpart
        index = len(self._tools)
        self._tools[data.get("index", -1)] = index
        call = {"index": index, "id": block["id"], "type": "function",
                "function": {"name": block["name"], "arguments": ""}}
        return [self._chunk({"tool_calls": [call]})]

    def _block_delta(self, data: dict) -> list[dict]:
        delta = data.get("delta") or {}
        if delta.get("type") == "text_delta":
            return [self._chunk({"content": delta["text"]})] if delta.get("text") else []
        if delta.get("type") == "input_json_delta" and delta.get("partial_json"):
            index = self._tools.get(data.get("index", -1))
            if index is None:
                return []
            self._arguments_sent.add(index)
            return [self._arguments(index, delta["partial_json"])]
        return []  # thinking, signature and citations deltas

    def _block_stop(self, data: dict) -> list[dict]:
        index = self._tools.get(data.get("index", -1))
        if index is None or index in self._arguments_sent:
            return []
        return [self._arguments(index, "{}")]  # a call with no arguments: "{}", as the non-streamed answer says

    def _arguments(self, index: int, fragment: str) -> dict:
        return self._chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})

    def _message_delta(self, data: dict) -> list[dict]:
        self._take_usage(data.get("usage"))
        reason = (data.get("delta") or {}).get("stop_reason")
        if reason is None or self._finish_sent:
            return []
        self._finish_sent = True
        return [self._chunk({}, finish_reason(reason))]

    def _message_stop(self, data: dict) -> list[dict]:
        if self.finished:
            return []
        self.finished = True
        chunks = [] if self._finish_sent else [self._chunk({}, finish_reason(None))]
        self._finish_sent = True
        if self.include_usage:
            chunks.append({"id": self._id, "object": "chat.completion.chunk", "created": self._created,
                           "model": self.model, "choices": [], "usage": self.usage})
        return chunks

    def _error(self, data: dict) -> list[dict]:
        error = data.get("error") or {}
        raise UpstreamStreamError(str(error.get("type") or "api_error"),
                                  redact(str(error.get("message") or "the upstream stream failed")))
