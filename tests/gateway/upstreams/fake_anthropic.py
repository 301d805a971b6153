"""A small, protocol-faithful Anthropic Messages server for tests: it checks the headers (the key as x-api-key or,
as recent `anthropic` SDKs send it, a bearer token; anthropic-version) and the request shape as strictly as the
real API, and answers each request from a script (plain or streamed, as the request asks).

    with FakeAnthropic() as fake:                    # or the `fake_anthropic` fixture (conftest.py)
        fake.script(Answer(text_message("Hi")), Fail.overloaded())
        ... point a client at fake.url with x-api-key API_KEY ...
        fake.requests[0].body                        # what arrived

A reply is one of the dataclasses below, or a callable taking the request body and returning one. With the
script empty, `fake.default` answers (a 500 api_error when it is None)."""
from __future__ import annotations

import asyncio
import itertools
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

API_KEY = "sk-ant-fake-0123456789abcdefghijklmnop"
VERSION = "2023-06-01"
_ids = itertools.count(1)


# ---- scripted answers ------------------------------------------------------------------------------------

def message(content: list[dict], *, stop_reason: str = "end_turn", stop_sequence: str | None = None,
            input_tokens: int = 21, output_tokens: int = 9, cache_read: int = 0, cache_creation: int = 0,
            model: str = "claude-fake-1") -> dict:
    """An Anthropic Message as the API returns it."""
    return {"id": f"msg_fake{next(_ids):08d}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": stop_sequence,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      "cache_creation_input_tokens": cache_creation, "cache_read_input_tokens": cache_read}}


def text_message(text: str, **kw) -> dict:
    return message([{"type": "text", "text": text}], **kw)


def tool_use(name: str, input: dict, *, id: str | None = None, partial_json: str | None = None) -> dict:
    """A tool_use block; `partial_json` is what a stream sends instead of the whole input (an answer cut by
    max_tokens mid-call)."""
    block = {"type": "tool_use", "id": id or f"toolu_fake{next(_ids):08d}", "name": name, "input": input}
    if partial_json is not None:
        block["_partial_json"] = partial_json
    return block


def tool_message(*calls: dict, text: str | None = None, stop_reason: str = "tool_use", **kw) -> dict:
    content = ([{"type": "text", "text": text}] if text else []) + list(calls)
    return message(content, stop_reason=stop_reason, **kw)


def plain(message: dict) -> dict:
    """The message as a non-streamed answer (the fake's own private keys left out)."""
    content = [{k: v for k, v in block.items() if not k.startswith("_")} for block in message["content"]]
    return {**message, "content": content}


def stream_events(message: dict, *, piece: int = 5, full_delta_usage: bool = False) -> list[tuple[str, dict]]:
    """The exact event sequence the API streams for `message`: message_start (usage with the input tokens and a
    first output token), per block content_block_start / deltas / content_block_stop (a ping after the first
    start), message_delta with the stop reason and CUMULATIVE usage, message_stop."""
    usage = message["usage"]
    start = {**plain(message), "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**usage, "output_tokens": 1}}
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(message["content"]):
        events += _block_events(i, block, piece)
        if i == 0:
            events.insert(2, ("ping", {"type": "ping"}))
    delta_usage = dict(usage) if full_delta_usage else {"output_tokens": usage["output_tokens"]}
    events.append(("message_delta", {"type": "message_delta", "usage": delta_usage,
                                     "delta": {"stop_reason": message["stop_reason"],
                                               "stop_sequence": message["stop_sequence"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def _block_events(i: int, block: dict, piece: int) -> list[tuple[str, dict]]:
    kind = block["type"]
    if kind == "text":
        first = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], piece)]
    elif kind == "tool_use":
        first = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        raw = block.get("_partial_json", json.dumps(block["input"]) if block["input"] else "")
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *_pieces(raw, piece)]]
    elif kind == "thinking":
        first = {"type": "thinking", "thinking": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"], piece)]
        deltas.append({"type": "signature_delta", "signature": block.get("signature", "sig")})
    else:
        raise ValueError(f"the fake cannot stream a {kind} block")
    return ([("content_block_start", {"type": "content_block_start", "index": i, "content_block": first})]
            + [("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}) for d in deltas]
            + [("content_block_stop", {"type": "content_block_stop", "index": i})])


@dataclass
class Answer:
    """`message`, plain or streamed as the request asks, after `first_byte_s`; streamed events `delay_s` apart."""
    message: dict
    delay_s: float = 0.0
    first_byte_s: float = 0.0
    full_delta_usage: bool = False  # message_delta's usage repeats the input counts (newer API versions do)


@dataclass
class Fail:
    """An HTTP error in Anthropic's shape."""
    status: int
    type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def rate_limited(cls, retry_after: int = 7) -> Fail:
        return cls(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit.",
                   {"retry-after": str(retry_after)})

    @classmethod
    def overloaded(cls) -> Fail:
        return cls(529, "overloaded_error", "Overloaded")

    @classmethod
    def server_error(cls) -> Fail:
        return cls(500, "api_error", "Internal server error")


@dataclass
class Cut:
    """A stream of `message` that stops after `after` events, with no message_stop: the body ends cleanly
    (the last chunk sent) or, `abrupt`, the connection drops mid-body."""
    message: dict
    after: int
    abrupt: bool = False


@dataclass
class StreamError:
    """A stream of `message` with an `error` event after `after` events (as the API does when it overloads
    mid-answer), then the end of the stream."""
    message: dict
    after: int
    type: str = "overloaded_error"
    error_message: str = "Overloaded"


@dataclass
class Silent:
    """Accepts the request and sends nothing: no status line at all, or (`headers`) 200 and the stream's headers
    and then nothing. It holds until the client goes away or the fake stops."""
    headers: bool = False


@dataclass
class PingsOnly:
    """A stream that opens (200 and, with `message`, its message_start) and then only pings, `interval_s` apart,
    until the client goes."""
    message: dict | None = None
    interval_s: float = 0.05


@dataclass
class Events:
    """Raw SSE events, as given, `delay_s` apart (for protocol corners the other replies do not cover)."""
    events: list[tuple[str, dict]]
    delay_s: float = 0.0


Reply = Answer | Fail | Cut | StreamError | Silent | PingsOnly | Events


@dataclass
class Recorded:
    headers: dict[str, str]
    body: Any


# ---- request validation (as strict as the API) -----------------------------------------------------------

_TOP_LEVEL = {"model", "messages", "max_tokens", "system", "stop_sequences", "temperature", "top_p", "top_k",
              "tools", "tool_choice", "metadata", "stream", "thinking", "service_tier", "cache_control", "container",
              "inference_geo", "output_config", "speed"}
_MEDIA_TYPES = {"image/jpeg", "image/png", "image/gif", "image/webp"}
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")


class Invalid(Exception):
    """A request the API would answer with 400 invalid_request_error."""


def _number(body: dict, key: str, low: float, high: float) -> None:
    value = body.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                              or not low <= value <= high):
        raise Invalid(f"{key}: Input should be between {low} and {high}")


def check_request(body: Any) -> None:
    """Raise Invalid with the API's kind of message for a body the Messages API refuses."""
    if not isinstance(body, dict):
        raise Invalid("Input should be a valid dictionary")
    for key in body:
        if key not in _TOP_LEVEL:
            raise Invalid(f"{key}: Extra inputs are not permitted")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise Invalid("model: Field required")
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        raise Invalid("max_tokens: Field required")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise Invalid("max_tokens: Input should be greater than or equal to 1")
    _number(body, "temperature", 0, 1)
    _number(body, "top_p", 0, 1)
    if body.get("top_k") is not None and (not isinstance(body["top_k"], int) or body["top_k"] < 0):
        raise Invalid("top_k: Input should be greater than or equal to 0")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise Invalid("stream: Input should be a valid boolean")
    _check_system(body.get("system"))
    stops = body.get("stop_sequences")
    if stops is not None and (not isinstance(stops, list)
                              or not all(isinstance(s, str) and s.strip() for s in stops)):
        raise Invalid("stop_sequences: each stop sequence must contain non-whitespace")
    metadata = body.get("metadata")
    if metadata is not None and (not isinstance(metadata, dict) or set(metadata) - {"user_id"}):
        raise Invalid("metadata: only user_id is permitted")
    names = _check_tools(body.get("tools"))
    _check_tool_choice(body.get("tool_choice"), names)
    _check_messages(body.get("messages"))


def _check_system(system: Any) -> None:
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list) or not all(isinstance(b, dict) and b.get("type") == "text"
                                               and isinstance(b.get("text"), str) for b in system):
        raise Invalid("system: Input should be a valid string or a list of text blocks")


def _check_tools(tools: Any) -> set[str] | None:
    if tools is None:
        return None
    if not isinstance(tools, list) or not tools:
        raise Invalid("tools: List should have at least 1 item after validation, not 0")
    names = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or set(tool) - {"name", "description", "input_schema", "cache_control", "type"}:
            raise Invalid(f"tools.{i}: Extra inputs are not permitted")
        if not isinstance(tool.get("name"), str) or not _TOOL_NAME.match(tool["name"]):
            raise Invalid(f"tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'")
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise Invalid(f"tools.{i}.input_schema: input_schema must be a JSON schema of type object")
        if tool["name"] in names:
            raise Invalid("tools: Tool names must be unique.")
        names.add(tool["name"])
    return names


def _check_tool_choice(choice: Any, names: set[str] | None) -> None:
    if choice is None:
        return
    if names is None:
        raise Invalid("tool_choice may only be specified while providing tools.")
    kind = choice.get("type") if isinstance(choice, dict) else None
    allowed = {"auto": {"type", "disable_parallel_tool_use"}, "any": {"type", "disable_parallel_tool_use"},
               "tool": {"type", "name", "disable_parallel_tool_use"}, "none": {"type"}}
    if kind not in allowed:
        raise Invalid("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
    if set(choice) - allowed[kind]:
        raise Invalid(f"tool_choice.{kind}: Extra inputs are not permitted")
    if kind == "tool" and choice.get("name") not in names:
        raise Invalid("tool_choice.name: the named tool is not in tools")


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise Invalid("messages: List should have at least 1 item after validation, not 0")
    pending: set[str] = set()  # tool_use ids the next user turn must answer
    for i, turn in enumerate(messages):
        if not isinstance(turn, dict) or set(turn) - {"role", "content"}:
            raise Invalid(f"messages.{i}: Extra inputs are not permitted")
        role = turn.get("role")
        if role not in ("user", "assistant"):
            raise Invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if i == 0 and role != "user":
            raise Invalid("messages: first message must use the \"user\" role")
        if i > 0 and messages[i - 1].get("role") == role:
            raise Invalid(f"messages: roles must alternate between \"user\" and \"assistant\", "
                          f"but found multiple \"{role}\" roles in a row")
        blocks = _blocks(turn.get("content"), f"messages.{i}.content")
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        if pending and (role != "user" or set(results) != pending):
            raise Invalid(f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                          f"after: {', '.join(sorted(pending - set(results)))}. Each `tool_use` block must have a "
                          f"corresponding `tool_result` block in the next message.")
        if set(results) - pending:
            raise Invalid(f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks")
        kinds = [b["type"] for b in blocks]
        if "tool_result" in kinds and kinds.index("tool_result") > 0 and kinds[0] != "tool_result":
            raise Invalid(f"messages.{i}.content: tool_result blocks must come first")
        for b in blocks:
            if b["type"] in _ROLE_BLOCKS and role != _ROLE_BLOCKS[b["type"]]:
                raise Invalid(f"messages.{i}.content: {b['type']} blocks are only allowed in "
                              f"{_ROLE_BLOCKS[b['type']]} turns")
        pending = {b["id"] for b in blocks if b["type"] == "tool_use"}
        last = i == len(messages) - 1
        if last and role == "assistant" and blocks and blocks[-1]["type"] == "text" \
                and blocks[-1]["text"] != blocks[-1]["text"].rstrip():
            raise Invalid("messages: final assistant content cannot end with trailing whitespace")


_ROLE_BLOCKS = {"image": "user", "tool_result": "user", "tool_use": "assistant", "thinking": "assistant"}


def _blocks(content: Any, where: str) -> list[dict]:
    if isinstance(content, str):
        if not content.strip():
            raise Invalid(f"{where}: text content blocks must contain non-whitespace text")
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not content:
        raise Invalid(f"{where}: messages must have non-empty content")
    for j, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        check = _BLOCK_CHECKS.get(kind)
        if check is None:
            raise Invalid(f"{where}.{j}.type: Input tag '{kind}' does not match any of the expected tags")
        check(block, f"{where}.{j}")
    return content


def _text_block(block: dict, where: str) -> None:
    if not isinstance(block.get("text"), str) or not block["text"].strip():
        raise Invalid(f"{where}: text content blocks must contain non-whitespace text")


def _image_block(block: dict, where: str) -> None:
    source = block.get("source") or {}
    if source.get("type") == "base64":
        if source.get("media_type") not in _MEDIA_TYPES or not isinstance(source.get("data"), str):
            raise Invalid(f"{where}.source.media_type: Input should be one of {sorted(_MEDIA_TYPES)}")
    elif source.get("type") != "url" or not str(source.get("url", "")).startswith(("http://", "https://")):
        raise Invalid(f"{where}.source: Input tag does not match 'base64' or 'url'")


def _tool_use_block(block: dict, where: str) -> None:
    if not block.get("id") or not isinstance(block.get("name"), str) or not isinstance(block.get("input"), dict):
        raise Invalid(f"{where}: tool_use needs id, name and an input object")


def _tool_result_block(block: dict, where: str) -> None:
    if not block.get("tool_use_id"):
        raise Invalid(f"{where}.tool_use_id: Field required")
    content = block.get("content")
    if content is not None and not isinstance(content, str):
        for k, inner in enumerate(content if isinstance(content, list) else [None]):
            if not isinstance(inner, dict) or inner.get("type") not in ("text", "image"):
                raise Invalid(f"{where}.content.{k}: tool results hold text or image blocks")


def _thinking_block(block: dict, where: str) -> None:
    if not isinstance(block.get("thinking"), str) or "signature" not in block:
        raise Invalid(f"{where}: thinking needs thinking and signature")


_BLOCK_CHECKS = {"text": _text_block, "image": _image_block, "tool_use": _tool_use_block,
                 "tool_result": _tool_result_block, "thinking": _thinking_block}


# ---- the server ------------------------------------------------------------------------------------------

def error_body(kind: str, text: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": text}, "request_id": f"req_fake{next(_ids):08d}"}


def sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class _Dropped(Exception):
    """Raised inside a streamed body to make the server drop the connection mid-body."""


class FakeAnthropic:
    """The fake Messages API under uvicorn on 127.0.0.1 (port 0), in a background thread."""

    def __init__(self, *, api_key: str = API_KEY) -> None:
        self.api_key = api_key
        self.default: Reply | Callable[[dict], Reply] | None = None
        self.requests: list[Recorded] = []
        self._plan: deque = deque()
        self._stopping = threading.Event()
        app = Starlette(routes=[Route("/v1/messages", self._messages, methods=["POST"])])
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name="fake-anthropic", daemon=True)

    def script(self, *replies: Reply | Callable[[dict], Reply]) -> FakeAnthropic:
        """Queue replies: each request takes the next one."""
        self._plan.extend(replies)
        return self

    def reset(self) -> None:
        self._plan.clear()
        self.requests.clear()
        self.default = None

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the fake Anthropic server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc) -> None:
        self._stopping.set()
        self._server.should_exit = True
        self._thread.join(10)
        self._socket.close()

    # -- the route --

    async def _messages(self, request: Request) -> Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        raw = await request.body()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        self.requests.append(Recorded(headers, body))
        key = headers.get("x-api-key")
        if key is None and headers.get("authorization", "").lower().startswith("bearer "):
            key = headers["authorization"][7:].strip()  # recent SDKs send the API key as a bearer token
        if key is None:
            return self._error(401, "authentication_error", "x-api-key header is required")
        if key != self.api_key:
            return self._error(401, "authentication_error", "invalid x-api-key")
        if not headers.get("anthropic-version"):
            return self._error(400, "invalid_request_error", "anthropic-version: header is required")
        if body is None:
            return self._error(400, "invalid_request_error", "The request body is not valid JSON.")
        try:
            check_request(body)
        except Invalid as exc:
            return self._error(400, "invalid_request_error", str(exc))
        reply = self._plan.popleft() if self._plan else self.default
        if callable(reply) and not isinstance(reply, type):
            reply = reply(body)
        if reply is None:
            return self._error(500, "api_error", "the fake has no scripted reply for this request")
        return await self._answer(reply, request, stream=bool(body.get("stream")))

    async def _answer(self, reply: Reply, request: Request, *, stream: bool) -> Response:
        if isinstance(reply, Fail):
            return self._error(reply.status, reply.type, reply.message, reply.headers)
        if isinstance(reply, Silent) and not reply.headers:
            await self._hold(request)
            return Response(status_code=500)
        if isinstance(reply, Answer) and reply.first_byte_s:
            await asyncio.sleep(reply.first_byte_s)
        if isinstance(reply, Answer) and not stream:
            return JSONResponse(plain(reply.message), headers=self._ids())
        if isinstance(reply, Silent):  # the status line and headers, then no body
            return StreamingResponse(self._events(reply, request), headers=self._ids(),
                                     media_type="text/event-stream" if stream else "application/json")
        if not stream:
            return self._error(500, "api_error", f"the fake can only stream a {type(reply).__name__} reply")
        return StreamingResponse(self._events(reply, request), media_type="text/event-stream",
                                 headers={"cache-control": "no-cache", **self._ids()})

    async def _events(self, reply: Reply, request: Request) -> AsyncIterator[bytes]:
        if isinstance(reply, Silent):
            await self._hold(request)
            return
        if isinstance(reply, PingsOnly):
            if reply.message is not None:
                yield sse(*stream_events(reply.message)[0])
            while not self._stopping.is_set():
                await asyncio.sleep(reply.interval_s)
                yield sse("ping", {"type": "ping"})
            return
        if isinstance(reply, Events):
            events, delay = reply.events, reply.delay_s
        elif isinstance(reply, Answer):
            events, delay = stream_events(reply.message, full_delta_usage=reply.full_delta_usage), reply.delay_s
        else:
            events, delay = stream_events(reply.message)[:reply.after], 0.0
        for n, (event, data) in enumerate(events):
            if n and delay:
                await asyncio.sleep(delay)
            yield sse(event, data)
        if isinstance(reply, StreamError):
            yield sse("error", {"type": "error", "error": {"type": reply.type, "message": reply.error_message}})
        if isinstance(reply, Cut) and reply.abrupt:
            raise _Dropped("the scripted cut: the connection drops mid-body")

    async def _hold(self, request: Request) -> None:
        while not self._stopping.is_set() and not await request.is_disconnected():
            await asyncio.sleep(0.02)

    def _ids(self) -> dict[str, str]:
        return {"request-id": f"req_fake{next(_ids):08d}"}

    def _error(self, status: int, kind: str, text: str, headers: dict[str, str] | None = None) -> JSONResponse:
        return JSONResponse(error_body(kind, text), status_code=status, headers={**self._ids(), **(headers or {})})
