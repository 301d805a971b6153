"""Does the economics report's cost per 1M output tokens match the catalogue price and the engine's throughput?

    .venv/bin/python benchmarks/economics_check.py                 # 2 whole minutes of saturating load
    .venv/bin/python benchmarks/economics_check.py --minutes 3 --clients 32 --threads 2
    .venv/bin/python benchmarks/economics_check.py --backend ray   # one Ray Serve replica, as `make serve` runs

1. The engine benchmark's throughput (benchmarks/engine_throughput.py's engine run: 32 chat requests, outputs
   uniform 16..256 tokens, all at once) for the catalogue's fp32 version, on this machine, before and after the
   load (shared machines drift; their mean is the reference).
2. The gateway (fp32 in process, or on one Ray Serve replica; replica-minutes sampled every 5 s) under
   `--clients` closed-loop clients asking for the same mix, for `--minutes` whole UTC minutes (plus the start-up
   up to the next minute and a tail).
3. The economics report over exactly those minutes (gateway/economics/query.py): its serving cost per 1M output
   tokens, against what the catalogue price implies at the benchmark's throughput:
       expected = per_replica_hour / (benchmark tok/s * 3600) * 1e6
   and their ratio. A saturated replica should land within 10% (the acceptance target); a replica that idles
   between requests costs more per token, and the report's utilisation says by how much.

`--split-cores` (in-process backend, 1 engine thread) gives the engine a core of its own, as a worker has its own
hardware in production: both engine benchmarks and the gateway's engine loop thread run on CPU 1, everything
else of the gateway (event loop, HTTP, ledger, recorder) and the load clients on CPU 0. Without it, on a 2-core
machine the gateway and its clients take CPU time from the engine, and the report's cost per token is that of a
worker sharing its CPU with the gateway in front of it.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import random
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import httpx
import uvicorn

from benchmarks.engine_throughput import QUESTIONS, bench_engine, build_requests
from gateway.domain.period import Period
from gateway.billing.prices import seed_prices_from_catalogue
from gateway.catalogue import load_catalogue
from gateway.crud.keys import create_key
from gateway.crud.tenants import create_tenant
from gateway.db.database import Database
from gateway.db.migrate import upgrade
from gateway.economics.costs import seed_version_costs_from_catalogue
from gateway.economics.query import economics_report
from gateway.economics.report import ReportOptions
from gateway.main import create_app
from gateway.schemas.billing import decimal_text as dt
from gateway.serving.inprocess import InProcessBackend
from gateway.serving.ray_backend import RayServeBackend
from gateway.settings import Settings
from workers import LLM

VERSION = "smollm2-135m-instruct@fp32"
ADMIN_KEY = "tga-economics-check-0123456789abcdef"


def engine_benchmark(engine: dict, seed: int) -> float:
    """The engine benchmark's (c) run, output tokens per second."""
    llm = LLM(**engine)
    requests = build_requests(llm.tokenizer, 32, 16, 256, seed)
    bench_engine(llm, requests[:4])  # warm-up
    tps = bench_engine(llm, requests)
    del llm
    gc.collect()
    return tps


def pin_process(cpus: set[int]) -> None:
    """Every thread of this process onto `cpus` (threads started later inherit their creator's set)."""
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(ProcessLookupError, PermissionError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(tid), cpus)


def pin_thread(name: str, cpus: set[int]) -> None:
    thread = next((t for t in threading.enumerate() if t.name == name), None)
    if thread is None or thread.native_id is None:
        raise RuntimeError(f"no thread named {name!r} to pin")
    os.sched_setaffinity(thread.native_id, cpus)


def next_minute(when: datetime) -> datetime:
    return when.replace(second=0, microsecond=0) + timedelta(minutes=1)


class Server:
    def __init__(self, app) -> None:
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the gateway failed to start")
            time.sleep(0.05)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(60)


async def load(url: str, key: str, clients: int, until: float, seed: int) -> int:
    rng = random.Random(seed)
    done = 0

    async def client(i: int) -> None:
        nonlocal done
        async with httpx.AsyncClient(base_url=url, timeout=300, headers={"Authorization": f"Bearer {key}"}) as http:
            while time.time() < until:
                body = {"model": "smollm2-135m-instruct", "temperature": 0, "ignore_eos": True,
                        "max_tokens": rng.randint(16, 256),
                        "messages": [{"role": "user", "content": QUESTIONS[rng.randrange(len(QUESTIONS))]}]}
                r = await http.post("/v1/chat/completions", json=body)
                r.raise_for_status()
                done += 1

    await asyncio.gather(*(client(i) for i in range(clients)))
    return done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=int, default=2, help="whole UTC minutes the report covers")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2, help="engine threads (the catalogue's fp32 uses 2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", choices=["inprocess", "ray"], default="inprocess")
    ap.add_argument("--split-cores", action="store_true",
                    help="engine on CPU 1, the rest on CPU 0 (in-process backend, --threads 1)")
    args = ap.parse_args()
    if args.split_cores and (args.backend != "inprocess" or args.threads != 1 or (os.cpu_count() or 1) < 2):
        ap.error("--split-cores needs --backend inprocess, --threads 1 and at least 2 CPUs")
    engine_cpus, gateway_cpus = {1}, {0}
    if args.split_cores:
        pin_process(engine_cpus)
    catalogue = load_catalogue(Settings().catalogue)
    _, model, spec = catalogue.version(VERSION)
    engine = {"model": model.weights, **spec.engine, "num_threads": args.threads}

    before = engine_benchmark(engine, args.seed)
    print(f"engine benchmark ({VERSION}, {args.threads} threads): {before:.1f} output tok/s", flush=True)

    tmp = Path(tempfile.mkdtemp(prefix="economics-check-"))
    db_url = f"sqlite:///{tmp / 'tollgate.db'}"
    upgrade(db_url)
    database = Database(db_url)
    with database.session() as s:
        seed_prices_from_catalogue(s, catalogue)
        seed_version_costs_from_catalogue(s, catalogue)
        tenant = create_tenant(s, name="economics-check")
        _, key = create_key(s, tenant_id=tenant.id)
    settings = Settings(DATABASE_URL=db_url, REDIS_URL="", data_dir=tmp, admin_key=ADMIN_KEY, backend=args.backend,
                        log_level="WARNING", cache_enabled=False, embeddings_enabled=False, economics_sample_s=5,
                        request_timeout_s=600, RAY_ADDRESS="", ray_num_cpus=2)
    if args.backend == "ray":  # one replica, however busy: the comparison is with one engine
        backend = RayServeBackend(settings, catalogue, engine_overrides={"num_threads": args.threads},
                                  versions=[VERSION], min_replicas=1, max_replicas=1, num_cpus=1,
                                  env={"OMP_NUM_THREADS": str(args.threads)})
    else:
        backend = InProcessBackend(catalogue, {"num_threads": args.threads}, versions=[VERSION])
    if args.split_cores:
        pin_process(gateway_cpus)  # the server thread and the clients inherit it
    with Server(create_app(settings, backend=backend)) as url:
        if args.split_cores:
            pin_thread("tollgate-engine", engine_cpus)  # started by the app's start-up, which has run
            print("cores: engine loop thread on CPU 1; gateway, clients and the rest on CPU 0", flush=True)
        start = next_minute(datetime.now(UTC) + timedelta(seconds=20))  # the batch fills before it
        end = start + timedelta(minutes=args.minutes)
        print(f"load: {args.clients} clients until {end:%H:%M:%S} UTC; the report covers {start:%H:%M}-{end:%H:%M}",
              flush=True)
        requests = asyncio.run(load(url, key, args.clients, (end + timedelta(seconds=5)).timestamp(), args.seed))
        time.sleep(6)  # the ledger's last rows and the recorder's last sample
    with database.session() as s:
        report = economics_report(s, period=Period(start, end), month=None, options=ReportOptions())
    database.dispose()
    if args.split_cores:
        pin_process(engine_cpus)
    after = engine_benchmark(engine, args.seed)
    tps = (before + after) / 2
    print(f"engine benchmark again: {after:.1f} output tok/s; mean {tps:.1f}")
    line = next(v for m in report.models for v in m.versions if v.version == VERSION)
    price = line.per_replica_hour
    expected = price * Decimal(1_000_000) / (Decimal(repr(tps)) * 3600)
    got = line.cost_per_million_output_tokens
    gateway_tps = line.completion_tokens / (args.minutes * 60)
    print(f"{requests} requests; in the window: {line.requests} finished, {line.completion_tokens} output tokens "
          f"({gateway_tps:.1f} tok/s through the gateway, {gateway_tps / tps:.3f} of the benchmark's)")
    print(f"replica-hours {dt(line.replica_hours)}, engine-hours {dt(line.engine_hours)}, utilisation "
          f"{dt(line.utilisation)} (above 1: requests finishing in the window began before it), metered "
          f"throughput {dt(line.throughput)} tok/s")
    print(f"price {dt(price)}/replica-hour ({line.hardware}); serving cost {dt(line.serving_cost)}, attributed "
          f"{dt(line.attributed_cost)}, idle {dt(line.idle_cost)}, cost {dt(line.cost)}")
    print(f"report: cost per 1M output tokens  {got:.4f}")
    print(f"expected: price / benchmark tok/s  {expected:.4f}")
    print(f"ratio report / expected            {got / expected:.3f}")

if __name__ == "__main__":
    main()
