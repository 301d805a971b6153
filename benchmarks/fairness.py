"""One tenant's flood against another's interactive requests, under FCFS and under fair scheduling.

Tenant A keeps `--flood` long requests in flight (256 output tokens each, EOS ignored, a new one as soon as one
ends); tenant B sends short ones (16 tokens) one at a time, with a short think time between. The engine is a
CPU replica's shape: `--max-num-seqs` 8, so A alone fills the batch. Prints B's time to first token (p50, p99)
and each run's total output tokens/s, then the ratios fair / FCFS. Targets: B's p99 TTFT at least 5x lower
with fair scheduling, total throughput within 5%.

    .venv/bin/python benchmarks/fairness.py              # ~2 x 60 s of traffic after the model loads
    .venv/bin/python benchmarks/fairness.py --seconds 20 # a shorter run
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from prometheus_client import CollectorRegistry

from workers import EngineConfig, SamplingParams
from workers.engine.async_engine import AsyncEngine
from workers.schedule_params import ScheduleParams

FLOOD_PROMPT = [{"role": "user", "content": "Write a long story about a lighthouse keeper and a storm."}]
SHORT_PROMPT = [{"role": "user", "content": "What is the capital of France?"}]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run(policy: str, args) -> dict:
    config = EngineConfig(model=args.model, max_num_seqs=args.max_num_seqs, num_threads=args.threads,
                          scheduling_policy=policy, max_waiting_per_tenant=None, max_waiting_requests=None)
    engine = AsyncEngine(config, registry=CollectorRegistry())
    await engine.start()
    tokens = 0
    ttfts: list[float] = []
    stop = asyncio.Event()
    ids = iter(range(10**9))

    waiting_since: list[float] = []  # B's request still waiting for its first token, when the window closes

    async def one(tenant: str, messages, max_tokens: int) -> float:
        nonlocal tokens
        params = SamplingParams(max_tokens=max_tokens, temperature=0, ignore_eos=True)
        started, first = time.perf_counter(), None
        if tenant == "B":
            waiting_since[:] = [started]
        async for out in engine.generate(f"{tenant}-{next(ids)}", messages=messages, params=params,
                                         schedule=ScheduleParams(tenant=tenant)):
            if first is None and out.outputs and out.outputs[0].token_ids:
                first = time.perf_counter() - started
                if tenant == "B":
                    waiting_since.clear()
            tokens += sum(len(c.token_ids) for c in out.outputs)
        return first

    async def flooder() -> None:
        while not stop.is_set():
            await one("A", FLOOD_PROMPT, 256)

    async def interactive() -> None:
        while not stop.is_set():
            ttfts.append(await one("B", SHORT_PROMPT, 16))
            await asyncio.sleep(0.2)

    # The flood is in place before the measured window opens.
    floods = [asyncio.create_task(flooder()) for _ in range(args.flood)]
    await asyncio.sleep(args.warmup)
    tokens, started = 0, time.perf_counter()
    b = asyncio.create_task(interactive())
    await asyncio.sleep(args.seconds)
    elapsed = time.perf_counter() - started
    total = tokens
    # A request of B's still waiting counts with its wait so far: a lower bound of its TTFT.
    censored = bool(waiting_since)
    if censored:
        ttfts.append(time.perf_counter() - waiting_since[0])
    stop.set()
    for t in [*floods, b]:
        t.cancel()
    await asyncio.gather(*floods, b, return_exceptions=True)
    await engine.stop()
    return {"ttft_p50": statistics.median(ttfts), "ttft_p99": percentile(ttfts, 0.99), "b_requests": len(ttfts),
            "tok_s": total / elapsed, "censored": censored}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--flood", type=int, default=12, help="tenant A's requests in flight")
    p.add_argument("--max-num-seqs", type=int, default=8)
    p.add_argument("--seconds", type=float, default=60.0, help="measured window per policy")
    p.add_argument("--warmup", type=float, default=5.0)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    results = {policy: asyncio.run(run(policy, args)) for policy in ("fcfs", "fair")}
    fcfs, fair = results["fcfs"], results["fair"]
    print(f"tenant A: {args.flood} requests of 256 tokens in flight; tenant B: 16-token requests one at a time; "
          f"max_num_seqs {args.max_num_seqs}, {args.seconds:g} s per policy")
    print("| policy | B requests | B TTFT p50 (s) | B TTFT p99 (s) | total output tok/s |")
    print("| --- | --- | --- | --- | --- |")
    for name, r in results.items():
        at_least = ">= " if r["censored"] else ""  # the last request was still waiting: a lower bound
        print(f"| {name} | {r['b_requests']} | {r['ttft_p50']:.3f} | {at_least}{r['ttft_p99']:.3f} | "
              f"{r['tok_s']:.1f} |")
    print(f"B's p99 TTFT, FCFS / fair: {fcfs['ttft_p99'] / fair['ttft_p99']:.1f}x lower (target >= 5x)")
    print(f"total throughput, fair / FCFS: {fair['tok_s'] / fcfs['tok_s']:.3f} (target within 0.95-1.05)")


if __name__ == "__main__":
    main()
