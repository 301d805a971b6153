"""Scale-up time of a model version's pool: from cold (the autoscaler starts a replica, which
loads weights and warms up) versus from standby (an extra replica is already loaded).

Both runs put the same sustained load on a one-replica floor and time how long until a second
replica answers. Prints both times and their ratio.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/scale_up.py [--concurrency 16] [--num-cpus 2]
"""
from __future__ import annotations

import argparse
import asyncio
import time

import ray
from ray import serve

from gateway.catalogue import load_catalogue
from gateway.serving.pool import versions_from_catalogue
from gateway.settings import Settings
from workers.serve import protocol
from workers.serve.app import app_name, deploy

VERSION = "smollm2-135m-instruct@fp32"
ENGINE = {"num_kv_blocks": 128, "max_num_seqs": 8, "max_num_batched_tokens": 512, "num_threads": 1}


async def time_to_second_replica(handle, *, concurrency: int, max_tokens: int, timeout_s: float) -> tuple[float, int]:
    """Seconds from the start of the load until a request is answered by a second replica,
    and how many requests were answered by then."""
    start = time.monotonic()
    seen: dict[str, float] = {}
    served = 0
    done = asyncio.Event()

    async def client(i: int) -> None:
        nonlocal served
        n = 0
        while not done.is_set() and time.monotonic() - start < timeout_s:
            req = protocol.encode(protocol.Request(
                request_id=f"bench-{i}-{n}", prompt=f"Write a story about the number {i * 1000 + n}.",
                max_tokens=max_tokens, temperature=0, ignore_eos=True))
            n += 1
            async for data in handle.options(stream=True).generate.remote(req):
                chunk = protocol.decode_chunk(data)
                if chunk.replica is not None:
                    seen.setdefault(chunk.replica, time.monotonic() - start)
                    if len(seen) >= 2:
                        done.set()
            served += 1

    await asyncio.gather(*(client(i) for i in range(concurrency)))
    if len(seen) < 2:
        raise RuntimeError(f"no second replica answered within {timeout_s:g}s")
    return sorted(seen.values())[1], served


def run(standby: int, args: argparse.Namespace) -> tuple[float, int]:
    settings = Settings()
    [cfg] = versions_from_catalogue(
        load_catalogue(settings.catalogue), versions=[VERSION], engine_overrides=ENGINE,
        min_replicas=1, max_replicas=2 - standby, standby=standby, num_cpus=args.replica_cpus,
        target_ongoing_requests=2, upscale_delay_s=0.0, downscale_delay_s=600.0,
        max_ongoing_requests=ENGINE["max_num_seqs"], env={"OMP_NUM_THREADS": "1"})
    handles = deploy([cfg])
    try:
        return asyncio.run(time_to_second_replica(handles[VERSION], concurrency=args.concurrency,
                                                  max_tokens=args.max_tokens, timeout_s=args.timeout_s))
    finally:
        serve.delete(app_name(VERSION))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=16)
    p.add_argument("--num-cpus", type=float, default=2, help="CPUs of the local Ray instance")
    p.add_argument("--replica-cpus", type=float, default=0.5)
    p.add_argument("--timeout-s", type=float, default=180)
    args = p.parse_args()
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        cold, cold_served = run(0, args)
        warm, warm_served = run(1, args)
    finally:
        serve.shutdown()
        ray.shutdown()
    print(f"scale-up from cold:    {cold:7.2f} s  (second replica's first answer; {cold_served} requests served)")
    print(f"scale-up from standby: {warm:7.2f} s  ({warm_served} requests served)")
    print(f"ratio cold/standby:    {cold / warm:7.1f}x")


if __name__ == "__main__":
    main()
