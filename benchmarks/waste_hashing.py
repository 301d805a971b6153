"""What the waste report's prompt hashing costs a request: the full gateway (ASGI app, canned backend) at a
steady rate with the hashing on (TOLLGATE_WASTE_PREFIX_CAP=1000) against the same app with it off (0), in one
run; then the hashing's own work: `observe` on the request path, and the flush (hash, count, write) per request
in its worker thread.

Requests carry a 2 KB system prompt and one of 50 questions, so system prompts and whole prompts repeat.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/waste_hashing.py [--rate 200] [--requests 1500]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.canned_backend import CannedBackend
from benchmarks.gateway_overhead import pct, setup_database, steady
from gateway.billing.prefix_recorder import Observed, PrefixRecorder
from gateway.catalogue import load_catalogue
from gateway.crud.tenants import create_tenant
from gateway.db.database import Database
from gateway.main import create_app
from gateway.settings import Settings

SYSTEM = {"role": "system", "content": ("You are the support assistant of a hardware shop. " * 40).strip()}
QUESTIONS = [f"Question number {i}: where is order {1000 + i}?" for i in range(50)]


def messages(i: int) -> list[dict]:
    return [SYSTEM, {"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}]


async def gateway_latencies(cap: int, args) -> tuple[list[float], int]:
    """(latencies, requests the hashing wrote) for one app with the given cap."""
    tmp = Path(tempfile.mkdtemp(prefix="tollgate-waste-bench-"))
    url = f"sqlite:///{tmp / 'bench.db'}"
    settings = Settings(DATABASE_URL=url, REDIS_URL="", data_dir=tmp, admin_key="tga-bench-" + "0" * 32,
                        log_level="WARNING", embeddings_enabled=False, cache_enabled=False, waste_prefix_cap=cap)
    key = setup_database(url, load_catalogue(settings.catalogue))
    app = create_app(settings, backend=CannedBackend(tokens=4))
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway",
                                     headers={"Authorization": f"Bearer {key}"}) as client:
            async def one(i: int) -> float:
                t = time.perf_counter()
                r = await client.post("/v1/chat/completions", json={
                    "model": "smollm2-135m-instruct", "messages": messages(i), "max_tokens": 4})
                if r.status_code != 200:
                    raise RuntimeError(f"gateway answered {r.status_code}: {r.text}")
                return time.perf_counter() - t

            await steady(one, args.warmup, args.rate)
            xs = await steady(one, args.requests, args.rate)
        prefixes = app.state.services.prefixes
        await prefixes.flush()
        return xs, prefixes.recorded


async def hashing_alone(n: int) -> tuple[float, float]:
    """(µs per observe on the request path, µs per request of the flush's worker thread), in CPU time: on a shared
    machine, wall time counts other processes' turns too."""
    tmp = Path(tempfile.mkdtemp(prefix="tollgate-waste-bench-"))
    url = f"sqlite:///{tmp / 'bench.db'}"
    setup_database(url, load_catalogue(Settings().catalogue))
    db = Database(url)
    with db.session() as session:
        tenant = create_tenant(session, name="hashing").id
    recorder = PrefixRecorder(db, count=lambda version, ms: sum(len(m["content"].split()) for m in ms))
    seen = [Observed(tenant_id=tenant, at=datetime.now(UTC), prompt_tokens=500, version="v", prompt=None,
                     messages=messages(i)) for i in range(n)]
    t = time.process_time()
    for s in seen:
        recorder.observe(s)
    observe_us = (time.process_time() - t) / n * 1e6
    t = time.process_time()
    await recorder.flush()
    flush_us = (time.process_time() - t) / n * 1e6
    db.dispose()
    return observe_us, flush_us


async def main(args) -> None:
    off, _ = await gateway_latencies(0, args)
    on, written = await gateway_latencies(1000, args)
    off_again, _ = await gateway_latencies(0, args)  # the order of runs is not what differs
    def ms(s: float) -> float:
        return s * 1000

    print(f"requests={args.requests} rate={args.rate}/s, 2 KB system prompt, 50 questions; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for name, xs in (("hashing off", off), ("hashing on", on), ("hashing off again", off_again)):
        print(f"{name:18s} p50={ms(pct(xs, .5)):7.3f} ms  p99={ms(pct(xs, .99)):7.3f} ms  "
              f"mean={ms(statistics.fmean(xs)):7.3f} ms")
    base = off + off_again
    print(f"ratio on/off: p50={pct(on, .5) / pct(base, .5):.3f}x  p99={pct(on, .99) / pct(base, .99):.3f}x  "
          f"mean={statistics.fmean(on) / statistics.fmean(base):.3f}x  (requests hashed: {written})")
    observe_us, flush_us = await hashing_alone(args.requests)
    print(f"CPU time: observe (request path) {observe_us:.2f} µs/request; flush (worker thread: hash, count, "
          f"write) {flush_us:.1f} µs/request, {1e6 / flush_us:,.0f} requests/s of one core")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rate", type=float, default=200.0, help="requests per second")
    p.add_argument("--requests", type=int, default=1500)
    p.add_argument("--warmup", type=int, default=200)
    asyncio.run(main(p.parse_args()))
