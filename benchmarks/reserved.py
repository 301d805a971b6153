"""Reserved throughput under a best-effort flood: one engine (a CPU replica's shape), one tenant reserved at R
output tokens/s, and a flood from other tenants; then the same traffic without the reservation.

The reserved tenant keeps `--reserved-concurrency` requests in flight (64 output tokens each, EOS ignored, the
next sent as one ends): enough demand to use more than R. `--flood-tenants` other tenants keep `--flood` requests
each in flight (128 tokens). The engine is the default fair policy, `--max-num-seqs` 8, so the flood alone fills
the batch and fair share alone would give the tenant about 1/(tenants) of it. Prints the tenant's achieved output
tokens/s (target >= 0.95 R), of which covered by the reservation, its TTFT p50/p99, the flood's throughput, and
the ratios with / without.

    .venv/bin/python benchmarks/reserved.py               # ~2 x 35 s of traffic after the model loads
    .venv/bin/python benchmarks/reserved.py --rate 40 --seconds 20
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
RESERVED_PROMPT = [{"role": "user", "content": "Summarise the plot of a detective novel."}]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run(rate: float, args) -> dict:
    config = EngineConfig(model=args.model, max_num_seqs=args.max_num_seqs, num_threads=args.threads,
                          max_waiting_per_tenant=None, max_waiting_requests=None)
    engine = AsyncEngine(config, registry=CollectorRegistry())
    await engine.start()
    counted = {"reserved": 0, "covered": 0, "flood": 0}
    ttfts: list[float] = []
    measuring = asyncio.Event()
    stop = asyncio.Event()
    ids = iter(range(10**9))

    async def one(tenant: str, messages, max_tokens: int, reserved: float) -> None:
        params = SamplingParams(max_tokens=max_tokens, temperature=0, ignore_eos=True)
        started, first, seen, covered = time.perf_counter(), None, 0, 0
        schedule = ScheduleParams(tenant=tenant, reserved_tokens_per_s=reserved)
        async for out in engine.generate(f"{tenant}-{next(ids)}", messages=messages, params=params,
                                         schedule=schedule):
            new = out.num_output_tokens - seen
            seen, step_covered = out.num_output_tokens, out.num_reserved_tokens - covered
            covered = out.num_reserved_tokens
            if first is None and new:
                first = time.perf_counter() - started
            if measuring.is_set() and not stop.is_set():
                key = "reserved" if tenant == "tenant" else "flood"
                counted[key] += new
                if key == "reserved":
                    counted["covered"] += step_covered
        if tenant == "tenant" and measuring.is_set() and first is not None:
            ttfts.append(first)

    async def client(tenant: str, messages, max_tokens: int, reserved: float) -> None:
        while not stop.is_set():
            await one(tenant, messages, max_tokens, reserved)

    tasks = [asyncio.create_task(client(f"flood{t}", FLOOD_PROMPT, 128, 0.0))
             for t in range(args.flood_tenants) for _ in range(args.flood)]
    await asyncio.sleep(args.warmup)  # the flood is in place first
    tasks += [asyncio.create_task(client("tenant", RESERVED_PROMPT, 64, rate))
              for _ in range(args.reserved_concurrency)]
    await asyncio.sleep(2.0)
    measuring.set()
    started = time.perf_counter()
    await asyncio.sleep(args.seconds)
    stop.set()
    elapsed = time.perf_counter() - started
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await engine.stop()
    return {"tok_s": counted["reserved"] / elapsed, "covered_s": counted["covered"] / elapsed,
            "flood_s": counted["flood"] / elapsed, "requests": len(ttfts),
            "ttft_p50": statistics.median(ttfts) if ttfts else float("nan"),
            "ttft_p99": percentile(ttfts, 0.99) if ttfts else float("nan")}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--rate", type=float, default=50.0, help="R: the tenant's reserved output tokens/s")
    p.add_argument("--reserved-concurrency", type=int, default=4)
    p.add_argument("--flood-tenants", type=int, default=4)
    p.add_argument("--flood", type=int, default=6, help="requests in flight per flood tenant")
    p.add_argument("--max-num-seqs", type=int, default=8)
    p.add_argument("--seconds", type=float, default=30.0, help="measured window per run")
    p.add_argument("--warmup", type=float, default=3.0)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    with_r = asyncio.run(run(args.rate, args))
    without = asyncio.run(run(0.0, args))
    print(f"R = {args.rate:g} output tokens/s; tenant: {args.reserved_concurrency} x 64-token requests in flight; "
          f"flood: {args.flood_tenants} tenants x {args.flood} x 128-token requests; max_num_seqs "
          f"{args.max_num_seqs}; {args.seconds:g} s measured per run")
    print("| run | tenant tok/s | of which covered | tenant TTFT p50 (s) | tenant TTFT p99 (s) | flood tok/s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, r in (("reserved", with_r), ("no reservation", without)):
        print(f"| {name} | {r['tok_s']:.1f} | {r['covered_s']:.1f} | {r['ttft_p50']:.3f} | {r['ttft_p99']:.3f} "
              f"| {r['flood_s']:.1f} |")
    print(f"tenant tok/s / R: {with_r['tok_s'] / args.rate:.3f} (target >= 0.95); "
          f"without the reservation: {without['tok_s'] / args.rate:.3f}")
    print(f"tenant tok/s, reserved / not: {with_r['tok_s'] / max(without['tok_s'], 1e-9):.2f}x; "
          f"TTFT p99 not / reserved: {without['ttft_p99'] / with_r['ttft_p99']:.2f}x")
    total_with, total_without = with_r["tok_s"] + with_r["flood_s"], without["tok_s"] + without["flood_s"]
    print(f"flood tok/s, reserved / not: {with_r['flood_s'] / max(without['flood_s'], 1e-9):.3f}; "
          f"total tok/s, reserved / not: {total_with / total_without:.3f}")


if __name__ == "__main__":
    main()
