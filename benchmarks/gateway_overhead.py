"""The latency the gateway adds (request id, body check, auth, limits, routing, ledger,
serialisation) at a steady request rate, versus calling the serving interface directly.

Both paths use the same canned-token backend, so the difference is the gateway alone. The
gateway path runs the full ASGI app (middleware included) through httpx's in-process
transport; a bare GET /healthz through the same transport is printed as the client's floor.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/gateway_overhead.py [--rate 200] [--requests 2000] [--redis]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.canned_backend import VERSION, CannedBackend
from gateway.billing.prices import seed_prices_from_catalogue
from gateway.catalogue import load_catalogue
from gateway.crud.keys import create_key
from gateway.crud.tenants import create_tenant
from gateway.db.database import Database
from gateway.db.migrate import upgrade
from gateway.main import create_app
from gateway.serving.base import GenerationRequest
from gateway.settings import Settings

MESSAGES = [{"role": "user", "content": "Say hi to the benchmark."}]
MAX_TOKENS = 4


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def steady(fn, n: int, rate: float) -> list[float]:
    """Start request i at i/rate seconds (open loop); each returns its own latency."""
    loop = asyncio.get_running_loop()
    start, tasks = loop.time(), []
    for i in range(n):
        delay = start + i / rate - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(fn(i)))
    return list(await asyncio.gather(*tasks))


async def direct(backend: CannedBackend, i: int) -> float:
    t = time.perf_counter()
    request = GenerationRequest(request_id=f"direct-{i}", version=VERSION, messages=MESSAGES, max_tokens=MAX_TOKENS)
    async for _ in backend.stream(request):
        pass
    return time.perf_counter() - t


def setup_database(url: str, catalogue) -> str:
    upgrade(url)
    db = Database(url)
    with db.session() as session:
        seed_prices_from_catalogue(session, catalogue)
        tenant = create_tenant(session, name="bench", rpm=1_000_000, tpm=1_000_000_000,
                               monthly_token_budget=1_000_000_000)
        _, key = create_key(session, tenant_id=tenant.id, rpm=1_000_000, tpm=1_000_000_000)
    db.dispose()
    return key


async def main(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="tollgate-bench-"))
    url = f"sqlite:///{tmp / 'bench.db'}"
    settings = Settings(DATABASE_URL=url, REDIS_URL=args.redis_url if args.redis else "", data_dir=tmp,
                        admin_key="tga-bench-" + "0" * 32, log_level="WARNING", embeddings_enabled=False)
    key = setup_database(url, load_catalogue(settings.catalogue))
    backend = CannedBackend(tokens=MAX_TOKENS)
    app = create_app(settings, backend=backend)
    body = {"model": "smollm2-135m-instruct", "messages": MESSAGES, "max_tokens": MAX_TOKENS}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway",
                                     headers={"Authorization": f"Bearer {key}"}) as client:
            async def through_gateway(i: int) -> float:
                t = time.perf_counter()
                r = await client.post("/v1/chat/completions", json=body)
                elapsed = time.perf_counter() - t
                if r.status_code != 200:
                    raise RuntimeError(f"gateway answered {r.status_code}: {r.text}")
                return elapsed

            async def floor(i: int) -> float:
                t = time.perf_counter()
                await client.get("/healthz")
                return time.perf_counter() - t

            await steady(through_gateway, args.warmup, args.rate)  # key cache, prices, connections
            await steady(lambda i: direct(backend, i), args.warmup, args.rate)
            gw = await steady(through_gateway, args.requests, args.rate)
            dr = await steady(lambda i: direct(backend, i), args.requests, args.rate)
            fl = await steady(floor, args.requests, args.rate)
        await app.state.services.ledger.flush()

    ms = lambda s: s * 1000  # noqa: E731
    print(f"requests={args.requests} rate={args.rate}/s limits={'redis' if args.redis else 'memory'} "
          f"max_tokens={MAX_TOKENS}")
    for name, xs in (("direct (serving interface)", dr), ("gateway (full app)", gw),
                     ("client floor (GET /healthz)", fl)):
        print(f"{name:30s} p50={ms(pct(xs, .5)):7.3f} ms  p99={ms(pct(xs, .99)):7.3f} ms  "
              f"mean={ms(statistics.fmean(xs)):7.3f} ms")
    add50, add99 = pct(gw, .5) - pct(dr, .5), pct(gw, .99) - pct(dr, .99)
    print(f"gateway adds: p50={ms(add50):.3f} ms (target <= 2)  p99={ms(add99):.3f} ms (target <= 10)")
    print(f"ratio gateway/direct: p50={pct(gw, .5) / pct(dr, .5):.1f}x  p99={pct(gw, .99) / pct(dr, .99):.1f}x")
    print(f"beyond the client floor: p50={ms(pct(gw, .5) - pct(fl, .5)):.3f} ms  "
          f"p99={ms(pct(gw, .99) - pct(fl, .99)):.3f} ms   (load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs: other processes inflate p99)")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rate", type=float, default=200.0, help="requests per second")
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--redis", action="store_true", help="counters in Redis instead of in process")
    p.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    asyncio.run(main(p.parse_args()))
