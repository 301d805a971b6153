"""A small OpenAI-protocol server for the upstream tests, run as its own process (so a test can kill it):
`python -m tests.gateway.upstreams.fake_openai PORT KEY`. It speaks the wire format as OpenAI and vLLM do:
a role chunk, content chunks, a finish chunk, then (stream_options.include_usage) a usage chunk with empty choices,
then `data: [DONE]`; errors as {"error": {"message", "type", "code"}}.

What it does is chosen by the model id it is asked for:
    echo        answers "tok0 tok1 ... " (max_tokens words, up to 6), usage exact (prompt: words of the messages)
    nousage     as echo, but never reports usage
    tools       calls get_weather({"city": "Paris"}) in three argument fragments (first delta carries id and name)
    slow-first  sleeps 3 s before its first chunk (headers sent at once)
    slow        up to 20 tokens, 0.3 s apart
    silent      accepts the connection, never sends the response headers
    idle        two tokens, then only keep-alive comments
    cut         two tokens, then drops the connection (no finish, no [DONE])
Asked for logprobs (chat: `logprobs: true` + `top_logprobs`; completions: `logprobs: k`), each content chunk
carries its word's logprob (-0.5 for word i: -(i+1)/2) and k alternatives ("alt0 " .. at -10, -11, ...), in
OpenAI's per-chunk shapes.
    error-429 / error-500 / error-400   that status, with Retry-After on the 429
/v1/embeddings answers [characters, words, 0.5] per input (model error-500: a 500).
A request without `Authorization: Bearer KEY` gets a 401 whose message quotes the key it was sent, as some
providers' do (the gateway must never pass it on)."""
from __future__ import annotations

import asyncio
import json
import sys
import time

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

PROMPT_WORDS_PER_MESSAGE = 0


def _prompt_tokens(body: dict) -> int:
    if "messages" in body:
        return sum(len(str(m.get("content") or "").split()) for m in body["messages"]) + 3
    return len(str(body.get("prompt", "")).split())


def _error(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "invalid_request_error" if status < 500 else
                                   "server_error", "code": None}}, status_code=status, headers=headers)


def _logprobs(body: dict, chat: bool, word: str, i: int) -> dict | None:
    """The logprobs of one content chunk (one word), in chat's or legacy completions' shape; None when not asked."""
    value = -(i + 1) / 2
    if chat:
        if not body.get("logprobs"):
            return None
        top = [{"token": f"alt{j} ", "logprob": -10.0 - j, "bytes": list(f"alt{j} ".encode())}
               for j in range(int(body.get("top_logprobs") or 0))]
        return {"content": [{"token": word, "logprob": value, "bytes": list(word.encode()), "top_logprobs": top}]}
    k = body.get("logprobs")
    if k is None:
        return None
    return {"tokens": [word], "token_logprobs": [value], "top_logprobs": [{f"alt{j} ": -10.0 - j for j in range(k)}],
            "text_offset": [len(word) * i]}


def _chunk(body: dict, chat: bool, *, content=None, tool_calls=None, finish=None, role=False, usage=None,
           logprobs=None) -> dict:
    if chat:
        delta = {}
        if role:
            delta["role"] = "assistant"
        if content is not None:
            delta["content"] = content
        if tool_calls is not None:
            delta["tool_calls"] = tool_calls
        choices = [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": logprobs}]
        obj = "chat.completion.chunk"
    else:
        choices = [{"index": 0, "text": content or "", "finish_reason": finish, "logprobs": logprobs}]
        obj = "text_completion"
    out = {"id": "fake-1", "object": obj, "created": int(time.time()), "model": body["model"],
           "choices": [] if usage is not None else choices}
    if usage is not None:
        out["usage"] = usage
    return out


def _sse(d) -> bytes:
    return f"data: {json.dumps(d)}\n\n".encode()


async def _generate(request: Request, chat: bool):
    key = request.app.state.key
    if request.headers.get("authorization") != f"Bearer {key}":
        sent = request.headers.get("authorization", "").removeprefix("Bearer ")
        return _error(401, f"Incorrect API key provided: {sent}. You can find your API key in your account.")
    body = await request.json()
    model = body.get("model", "")
    if model.startswith("error-"):
        status = int(model.removeprefix("error-"))
        return _error(status, f"fake failure {status}", {"Retry-After": "7"} if status == 429 else None)
    if model == "silent":
        await asyncio.sleep(3600)
    most = 20 if model == "slow" else 6
    n_words = min(int(body.get("max_tokens") or most), most)
    words = [f"tok{i} " for i in range(n_words)]
    prompt = _prompt_tokens(body)
    usage = {"prompt_tokens": prompt, "completion_tokens": n_words, "total_tokens": prompt + n_words}
    request.app.state.seen.append(body)
    if not body.get("stream"):
        text = "".join(words)
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"
                      if n_words == int(body.get("max_tokens") or 6) else "stop"}
        else:
            choice = {"index": 0, "text": text, "finish_reason": "stop"}
        return JSONResponse({"id": "fake-1", "object": "chat.completion" if chat else "text_completion",
                             "created": int(time.time()), "model": model, "choices": [choice], "usage": usage})
    with_usage = bool((body.get("stream_options") or {}).get("include_usage")) and model != "nousage"

    async def events():
        if model == "slow-first":
            await asyncio.sleep(3)
        if chat:
            yield _sse(_chunk(body, chat, role=True, content=""))
        if model == "tools":
            yield _sse(_chunk(body, chat, tool_calls=[{"index": 0, "id": "call_fake1", "type": "function",
                                                       "function": {"name": "get_weather", "arguments": ""}}]))
            for frag in ('{"city"', ': "Pa', 'ris"}'):
                yield _sse(_chunk(body, chat, tool_calls=[{"index": 0, "function": {"arguments": frag}}]))
            yield _sse(_chunk(body, chat, finish="tool_calls"))
            if with_usage:
                yield _sse(_chunk(body, chat, usage={"prompt_tokens": prompt, "completion_tokens": 9,
                                                     "total_tokens": prompt + 9}))
            yield b"data: [DONE]\n\n"
            return
        for i, w in enumerate(words):
            yield _sse(_chunk(body, chat, content=w, logprobs=_logprobs(body, chat, w, i)))
            if model == "slow":
                await asyncio.sleep(0.3)
            if model in ("idle", "cut") and i == 1:
                if model == "cut":
                    raise ConnectionResetError("the fake upstream cuts the stream")
                while True:
                    await asyncio.sleep(0.2)
                    yield b": ping\n\n"
        finish = "length" if n_words == int(body.get("max_tokens") or 6) else "stop"
        yield _sse(_chunk(body, chat, finish=finish))
        if with_usage:
            yield _sse(_chunk(body, chat, usage=usage))
        yield b"data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


async def chat(request: Request) -> Response:
    return await _generate(request, True)


async def completions(request: Request) -> Response:
    return await _generate(request, False)


async def embeddings(request: Request) -> Response:
    """One 3-dimensional vector per input ([characters, words, 0.5]); usage: the inputs' words."""
    if request.headers.get("authorization") != f"Bearer {request.app.state.key}":
        return _error(401, "Incorrect API key provided.")
    body = await request.json()
    request.app.state.seen.append(body)
    if body.get("model") == "error-500":
        return _error(500, "fake failure 500")
    inputs = [body["input"]] if isinstance(body["input"], str) else body["input"]
    words = sum(len(t.split()) for t in inputs)
    data = [{"object": "embedding", "index": i, "embedding": [float(len(t)), float(len(t.split())), 0.5]}
            for i, t in reversed(list(enumerate(inputs)))]  # out of order, as servers may
    return JSONResponse({"object": "list", "model": body["model"], "data": data,
                         "usage": {"prompt_tokens": words, "total_tokens": words}})


async def seen(request: Request) -> Response:
    return JSONResponse(request.app.state.seen[-20:])


def build_app(key: str) -> Starlette:
    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]),
                            Route("/v1/completions", completions, methods=["POST"]),
                            Route("/v1/embeddings", embeddings, methods=["POST"]),
                            Route("/seen", seen, methods=["GET"])])
    app.state.key, app.state.seen = key, []
    return app


def main() -> None:
    port, key = int(sys.argv[1]), sys.argv[2]
    uvicorn.run(build_app(key), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
