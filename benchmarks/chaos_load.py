"""Steady client traffic for benchmarks/chaos.py: client threads sending chat requests back to back,
streamed and not, each recorded as one Outcome with what the client saw and was told."""
from __future__ import annotations

import itertools
import json
import random
import threading
import time
from dataclasses import dataclass, field

import httpx
import contextlib

HUNG_S = 30.0  # a request open longer than this is hung
CLIENT_TIMEOUT_S = 35.0

# Error codes carried inside a stream after its 200 header, as the status they would have had.
SSE_ERROR_STATUS = {"generation_failed": 502, "timeout": 504, "insufficient_quota": 429}


@dataclass(slots=True)
class Outcome:
    client: int
    tenant: str  # "main" | "budget"
    stream: bool
    start: float  # time.monotonic()
    end: float = 0.0
    status: int | None = None  # HTTP status; None when no response header arrived
    code: str | None = None  # the error's code (body, or an SSE error event)
    error_type: str | None = None
    retry_after: str | None = None
    request_id: str | None = None  # x-request-id, when headers arrived
    completed: bool = False  # the client got the whole answer: finish_reason (and [DONE] for a stream)
    usage: tuple[int, int] | None = None  # (prompt_tokens, completion_tokens) the client was told
    sse_error: bool = False  # a stream that ended in an error event
    # "connect": no gateway listening; "reset": the connection broke before any response header; "cut": it
    # broke after the header (mid-answer); "timeout"; "garbled": a body not in the API's shape
    transport: str | None = None

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def hung(self) -> bool:
        return self.transport == "timeout" or self.seconds > HUNG_S

    @property
    def effective_status(self) -> int | None:
        """The HTTP status, or for a stream that failed after its header the status its error stands for."""
        if self.sse_error:
            return SSE_ERROR_STATUS.get(self.code, 500)
        return self.status


PROMPTS = ["Say hello to {n}.", "Name a colour, {n}.", "What is {n} plus one?",
           "Give a word that rhymes with cat ({n}).", "Tell me one fact about the sea ({n}).", "Count to three, {n}."]


def request_body(n: int, *, stream: bool, max_tokens: int) -> dict:
    body = {"model": "smollm2-135m-instruct", "max_tokens": max_tokens, "temperature": 0.7,
            "messages": [{"role": "user", "content": PROMPTS[n % len(PROMPTS)].format(n=n)}]}
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    return body


def _usage(obj: dict | None) -> tuple[int, int] | None:
    if not obj:
        return None
    return int(obj["prompt_tokens"]), int(obj["completion_tokens"])


def _error_fields(o: Outcome, body: dict) -> None:
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        o.code, o.error_type = err.get("code"), err.get("type")


def send(http: httpx.Client, key: str, o: Outcome, body: dict) -> None:
    """One request; fills `o` with what the client saw. Never raises for a fault of the server."""
    headers = {"Authorization": f"Bearer {key}"}
    try:
        with http.stream("POST", "/v1/chat/completions", json=body, headers=headers) as r:
            o.status, o.request_id = r.status_code, r.headers.get("x-request-id")
            o.retry_after = r.headers.get("retry-after")
            if r.status_code != 200:
                r.read()
                with contextlib.suppress(ValueError):
                    _error_fields(o, r.json())
            elif body.get("stream"):
                _read_stream(r, o)
            else:
                r.read()
                answer = r.json()
                o.usage = _usage(answer.get("usage"))
                o.completed = bool(answer["choices"]) and answer["choices"][0].get("finish_reason") is not None
    except httpx.ConnectError:
        o.transport = "connect"
    except httpx.TimeoutException:
        o.transport = "timeout"
    except (httpx.TransportError, httpx.StreamError):
        o.transport = "cut" if o.status is not None else "reset"
    except (ValueError, KeyError, TypeError, IndexError):
        o.transport = "garbled"  # a body that is not what the API promises
    finally:
        o.end = time.monotonic()


def _read_stream(r: httpx.Response, o: Outcome) -> None:
    finished = done = False
    for line in r.iter_lines():
        if time.monotonic() - o.start > CLIENT_TIMEOUT_S:
            o.transport = "timeout"
            return
        if not line.startswith("data: "):
            continue
        data = line[len("data: "):]
        if data == "[DONE]":
            done = True
            break
        event = json.loads(data)
        if "error" in event:
            o.sse_error = True
            _error_fields(o, event)
            continue
        if event.get("usage"):
            o.usage = _usage(event["usage"])
        finished |= any(c.get("finish_reason") for c in event.get("choices") or [])
    o.completed = finished and done and not o.sse_error


@dataclass
class Load:
    """`clients` threads, each sending requests back to back until stop(). Client 0 uses the budget tenant's key
    when there is one; every other request of every client streams with probability `stream_share`."""
    url: str
    keys: dict[str, str]  # tenant label -> API key
    clients: int = 8
    max_tokens: int = 16
    stream_share: float = 0.5
    outcomes: list[Outcome] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.completion = threading.Event()  # set each time a client sees a complete answer
        self.last_completed: Outcome | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._numbers = itertools.count()
        self._threads = [threading.Thread(target=self._client, args=(i,), name=f"chaos-client-{i}", daemon=True)
                         for i in range(self.clients)]

    def start(self) -> Load:
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(CLIENT_TIMEOUT_S + 10)

    def snapshot(self) -> list[Outcome]:
        with self._lock:
            return list(self.outcomes)

    def _client(self, i: int) -> None:
        rng = random.Random(i)
        tenant = "budget" if i == 0 and "budget" in self.keys else "main"
        timeout = httpx.Timeout(CLIENT_TIMEOUT_S, connect=5.0)
        with httpx.Client(base_url=self.url, timeout=timeout) as http:
            while not self._stop.is_set():
                n = next(self._numbers)
                stream = rng.random() < self.stream_share
                o = Outcome(client=i, tenant=tenant, stream=stream, start=time.monotonic())
                send(http, self.keys[tenant], o, request_body(n, stream=stream, max_tokens=self.max_tokens))
                with self._lock:
                    self.outcomes.append(o)
                if o.completed:
                    self.last_completed = o
                    self.completion.set()
                if o.transport in ("connect", "reset", "cut"):
                    self._stop.wait(0.5)  # the gateway is down: do not spin
                elif o.status in (429, 503):
                    self._stop.wait(min(float(o.retry_after or 0.5), 2.0))
