"""What a running batch costs interactive requests: their time to first token (p50, p99) through the whole
gateway on the real engine (SmolLM2 fp32 in process), without a batch and with a large batch running in the
same gateway, alternated in rounds within one run (a shared machine's load drifts). Batch lines run at the
engines' background priority: only in steps with no interactive work. Target: interactive p99 TTFT
with the batch within 1.10x of without. Also prints how many batch lines finished meanwhile (the idle
capacity the batch filled).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/batch_impact.py              # 3 rounds of 2 x 15 s of traffic
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/batch_impact.py --rounds 1   # a shorter run
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from gateway.billing.prices import seed_prices_from_catalogue
from gateway.catalogue import load_catalogue
from gateway.crud.keys import create_key
from gateway.crud.tenants import create_tenant
from gateway.db.database import Database
from gateway.db.migrate import upgrade
from gateway.main import create_app
from gateway.serving.inprocess import InProcessBackend
from gateway.settings import Settings

MODEL, VERSION = "smollm2-135m-instruct", "smollm2-135m-instruct@fp32"
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def keys(url: str, catalogue) -> tuple[str, str]:
    """(interactive tenant's key, batch tenant's key): two tenants, as in production."""
    upgrade(url)
    db = Database(url)
    with db.session() as session:
        seed_prices_from_catalogue(session, catalogue)
        out = []
        for name in ("interactive", "batch"):
            tenant = create_tenant(session, name=name)
            out.append(create_key(session, tenant_id=tenant.id)[1])
    db.dispose()
    return out[0], out[1]


async def ttft(client: httpx.AsyncClient, key: str, max_tokens: int) -> float:
    body = {"model": MODEL, "messages": QUESTION, "max_tokens": max_tokens, "temperature": 0, "stream": True}
    started = time.perf_counter()
    async with client.stream("POST", "/v1/chat/completions", json=body,
                             headers={"Authorization": f"Bearer {key}"}) as r:
        if r.status_code != 200:
            raise RuntimeError(f"interactive request answered {r.status_code}: {await r.aread()}")
        first = None
        async for line in r.aiter_lines():
            if first is None and line.startswith("data: {") and '"content":"' in line and '"content":""' not in line:
                first = time.perf_counter() - started
    return first


async def interactive(client: httpx.AsyncClient, key: str, args) -> list[float]:
    """`args.clients` users, each asking, reading the answer, thinking, asking again, for `args.seconds`."""
    out: list[float] = []
    end = time.perf_counter() + args.seconds

    async def user() -> None:
        while time.perf_counter() < end:
            out.append(await ttft(client, key, args.max_tokens))
            await asyncio.sleep(args.think)

    await asyncio.gather(*(user() for _ in range(args.clients)))
    return out


async def start_batch(client: httpx.AsyncClient, key: str, args) -> str:
    h = {"Authorization": f"Bearer {key}"}
    lines = [{"custom_id": f"b{i}", "method": "POST", "url": "/v1/chat/completions",
              "body": {"model": MODEL, "max_tokens": args.batch_max_tokens, "temperature": 0,
                       "messages": [{"role": "user", "content": f"Write a short story about lighthouse {i}."}]}}
             for i in range(args.batch_lines)]
    content = b"".join(json.dumps(x).encode() + b"\n" for x in lines)
    f = await client.post("/v1/files", headers=h, data={"purpose": "batch"}, files={"file": ("b.jsonl", content)})
    b = await client.post("/v1/batches", headers=h, json={
        "input_file_id": f.json()["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"})
    batch_id = b.json()["id"]
    while (await batch(client, key, batch_id))["request_counts"]["completed"] < 1:  # running, lines in flight
        await asyncio.sleep(0.1)
    return batch_id


async def batch(client: httpx.AsyncClient, key: str, batch_id: str) -> dict:
    return (await client.get(f"/v1/batches/{batch_id}", headers={"Authorization": f"Bearer {key}"})).json()


async def main(args) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="tollgate-batch-impact-"))
    url = f"sqlite:///{tmp / 'bench.db'}"
    settings = Settings(DATABASE_URL=url, REDIS_URL="", data_dir=tmp, admin_key="tga-bench-" + "0" * 32,
                        log_level="WARNING", embeddings_enabled=False, cache_enabled=False,
                        batch_concurrency=args.batch_concurrency, batch_poll_s=0.2)
    catalogue = load_catalogue(settings.catalogue)
    ikey, bkey = keys(url, catalogue)
    backend = InProcessBackend(catalogue, {"max_num_seqs": args.max_num_seqs, "num_threads": args.threads},
                               versions=[VERSION])
    app = create_app(settings, backend=backend)
    async with (app.router.lifespan_context(app),
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway",
                                  timeout=120) as client):
        for _ in range(5):  # warm: key cache, prices, the engine's first steps
            await ttft(client, ikey, args.max_tokens)
        without, with_batch, during, elapsed = [], [], 0, 0.0
        for _ in range(args.rounds):
            without += await interactive(client, ikey, args)
            batch_id = await start_batch(client, bkey, args)
            before = (await batch(client, bkey, batch_id))["request_counts"]["completed"]
            t = time.perf_counter()
            with_batch += await interactive(client, ikey, args)
            elapsed += time.perf_counter() - t
            during += (await batch(client, bkey, batch_id))["request_counts"]["completed"] - before
            await client.post(f"/v1/batches/{batch_id}/cancel", headers={"Authorization": f"Bearer {bkey}"})
            while (await batch(client, bkey, batch_id))["status"] != "cancelled":  # lines in flight end
                await asyncio.sleep(0.1)
    ms = lambda s: s * 1000  # noqa: E731
    print(f"interactive: {args.clients} users, {args.max_tokens}-token answers, {args.think:g} s think time, "
          f"{args.rounds} rounds of {args.seconds:g} s per phase; batch: {args.batch_lines} lines of "
          f"{args.batch_max_tokens} tokens, "
          f"batch_concurrency {args.batch_concurrency}; engine max_num_seqs {args.max_num_seqs}, "
          f"{args.threads} threads")
    for name, xs in (("without a batch", without), ("with a batch", with_batch)):
        print(f"{name:16s} requests={len(xs):4d}  TTFT p50={ms(pct(xs, .5)):7.1f} ms  p99={ms(pct(xs, .99)):7.1f} ms  "
              f"mean={ms(statistics.fmean(xs)):7.1f} ms")
    print(f"ratio with/without: p50={pct(with_batch, .5) / pct(without, .5):.2f}x  "
          f"p99={pct(with_batch, .99) / pct(without, .99):.2f}x (target <= 1.10x)")
    print(f"batch lines finished while measured: {during} ({during / elapsed:.1f}/s)   "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=15.0, help="measured window per phase and round")
    p.add_argument("--rounds", type=int, default=3, help="without, then with a batch, this many times")
    p.add_argument("--clients", type=int, default=2, help="interactive users, each one request at a time")
    p.add_argument("--think", type=float, default=0.2, help="seconds between a user's requests")
    p.add_argument("--max-tokens", type=int, default=8, help="interactive answer length")
    p.add_argument("--batch-lines", type=int, default=2000)
    p.add_argument("--batch-max-tokens", type=int, default=32)
    p.add_argument("--batch-concurrency", type=int, default=4, help="the gateway's batch_concurrency")
    p.add_argument("--max-num-seqs", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    asyncio.run(main(p.parse_args()))
