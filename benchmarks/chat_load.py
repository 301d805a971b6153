"""A streamed-chat load: N chats through /v1/chat/completions (stream=True), C at a time, greedy, a fixed output
length, against any OpenAI-compatible server. Measures what a user sees: time to the first content token, the
gap per token after it, output tokens per second over the whole load, and errors.

    .venv/bin/python benchmarks/chat_load.py --url http://127.0.0.1:8000 --key tg-... [--chats 64 --concurrency 16]

Tokens are counted from the stream's usage (stream_options.include_usage); `ignore_eos` keeps every answer at
max_tokens on both servers, so both do the same work. ITL per request is (last token - first token) /
(tokens - 1), as guidellm reports it; a server that sends several tokens per event is not favoured by it.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import dataclass, field

import httpx

TOPICS = ["the sea", "a lighthouse", "winter", "a robot", "the moon", "a library", "bread", "a violin", "rain",
          "a bicycle", "the desert", "a clock", "tea", "a forest", "a train", "the city at night", "a garden",
          "a mountain", "snow", "a river", "a cat", "a storm", "the sun", "an old map", "a bridge", "honey", "chess",
          "a kite", "the market", "a letter", "glass", "a candle"]


def chats(n: int) -> list[list[dict]]:
    """n distinct chats (two phrasings per topic), the same for every server."""
    forms = ["Write a short story about {}.", "Describe {} in a few vivid sentences."]
    return [[{"role": "user", "content": forms[(i // len(TOPICS)) % 2].format(TOPICS[i % len(TOPICS)])}]
            for i in range(n)]


@dataclass
class Result:
    ttft_s: list[float] = field(default_factory=list)
    started_s: list[float] = field(default_factory=list)  # each ttft_s's request start, from the load's start
    itl_s: list[float] = field(default_factory=list)
    output_tokens: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    wall_s: float = 0.0


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


async def one(client: httpx.AsyncClient, url: str, model: str, messages: list[dict], max_tokens: int,
              result: Result, load_start: float = 0.0) -> None:
    body = {"model": model, "messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "ignore_eos": True, "stream_options": {"include_usage": True}}
    start = time.perf_counter()
    first = last = None
    tokens = 0
    try:
        async with client.stream("POST", f"{url}/v1/chat/completions", json=body) as r:
            if r.status_code != 200:
                raise RuntimeError(f"HTTP {r.status_code}: {(await r.aread())[:200]!r}")
            async for line in r.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                event = json.loads(line[6:])
                if "error" in event:
                    raise RuntimeError(f"error event: {event['error']}")
                if event.get("usage"):
                    tokens = event["usage"]["completion_tokens"]
                if any(c.get("delta", {}).get("content") for c in event.get("choices") or []):
                    last = time.perf_counter()
                    if first is None:
                        first = last
        if first is None or tokens != max_tokens:
            raise RuntimeError(f"{tokens} tokens streamed, {max_tokens} asked for")
    except Exception as e:  # counted, and a few kept to print
        result.errors += 1
        if len(result.error_samples) < 3:
            result.error_samples.append(f"{type(e).__name__}: {e}")
        return
    result.output_tokens += tokens
    result.ttft_s.append(first - start)
    result.started_s.append(start - load_start if load_start else 0.0)
    if tokens > 1:
        result.itl_s.append((last - first) / (tokens - 1))


WARMUP = [[{"role": "user", "content": f"Count to {i + 3}."}] for i in range(4)]


async def run(url: str, key: str, model: str, n: int, concurrency: int, max_tokens: int, *,
              warmup: bool = False) -> Result:
    """The load; `warmup`: four short chats that share no prefix with the load's (first-call costs paid, no prompt
    of the load cached ahead of it)."""
    result = Result()
    todo = asyncio.Queue()
    for messages in WARMUP if warmup else chats(n):
        todo.put_nowait(messages)
    headers = {"authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(600.0), limits=limits) as client:
        start = time.perf_counter()

        async def worker() -> None:
            while not todo.empty():
                await one(client, url, model, todo.get_nowait(), max_tokens, result, start)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        result.wall_s = time.perf_counter() - start
    return result


def summary(r: Result) -> dict:
    return {"output_tok_s": r.output_tokens / r.wall_s if r.wall_s else 0.0, "output_tokens": r.output_tokens,
            "ttft_p50_ms": 1000 * pct(r.ttft_s, 50), "ttft_p95_ms": 1000 * pct(r.ttft_s, 95),
            "itl_p50_ms": 1000 * pct(r.itl_s, 50), "itl_p95_ms": 1000 * pct(r.itl_s, 95),
            "errors": r.errors, "wall_s": r.wall_s, "error_samples": r.error_samples,
            # the slowest first tokens and when their requests started: a wave's prefill, or a stall?
            "ttft_worst": [(round(t, 3), round(at, 2))
                           for t, at in sorted(zip(r.ttft_s, r.started_s), reverse=True)[:4]]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--key", default="none")
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--chats", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=128)
    args = ap.parse_args()
    r = asyncio.run(run(args.url.rstrip("/"), args.key, args.model, args.chats, args.concurrency, args.max_tokens))
    print(json.dumps(summary(r), indent=1))
    return 1 if r.errors else 0


if __name__ == "__main__":
    sys.exit(main())
