"""Prompt chunks run as decode tokens (KernelSet.prompt_rows_as_decode) against the chunked causal path, on the
CPU kernel set, offline, alternated in one run: the time of the step that computes the prompts.

    .venv/bin/python benchmarks/prompt_rows.py                  # a wave of 16 chats, then one prompt per length
    .venv/bin/python benchmarks/prompt_rows.py --lengths 64 512 --repeats 9

The wave is what a server meets when 16 chats arrive at once: the chat template's head is cached (a warm-up
wrote it), so each chat computes its own ~15 tokens. A single prompt of N fresh tokens (random ids, never
cached) shows where per-token queries stop paying: each attends over its context read from the paged blocks,
where the chunked path gathers the context once per layer and runs one SDPA over the chunk.

Prints, per workload, the median step time of each path and the decode path's as a ratio of the chunked one's
(below 1: decode rows are faster).
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks.chat_load import TOPICS
from workers import LLM, SamplingParams

ONE = SamplingParams(max_tokens=1, temperature=0, ignore_eos=True)


def prompt_step(llm: LLM, requests: list[dict], rows_as_decode: int, tag: str) -> float:
    """Add the requests, time the step that computes their prompts (one step: they fit the token budget), finish."""
    engine = llm.engine
    engine.runner.kernels.prompt_rows_as_decode = rows_as_decode
    for i, r in enumerate(requests):
        engine.add_request(f"{tag}-{i}", **r, params=ONE)
    start = time.perf_counter()
    engine.step()
    took = time.perf_counter() - start
    while engine.has_unfinished_requests():
        engine.step()
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", type=int, nargs="+", default=[32, 64, 128, 256, 512, 1000])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--as-decode", type=int, default=4096, help="prompt_rows_as_decode for the decode path")
    args = ap.parse_args()
    llm = LLM()
    kernels = llm.engine.runner.kernels
    if kernels.name != "cpu":
        print(f"the {kernels.name} kernel set: this compares the CPU set's paths")
        return 1
    rng = random.Random(0)
    vocab = llm.tokenizer.vocab_size if hasattr(llm.tokenizer, "vocab_size") else 49152
    llm.chat([{"role": "user", "content": "Hello"}], SamplingParams(max_tokens=2))  # the template's head cached

    def wave() -> list[dict]:
        words = rng.sample(TOPICS, 16)
        return [{"messages": [{"role": "user", "content": f"{rng.randrange(10**6)}: write a short story about {w}."}]}
                for w in words]

    def single(n: int) -> list[dict]:
        return [{"prompt": [rng.randrange(100, vocab - 100) for _ in range(n)]}]

    workloads = [("wave of 16 chats", wave)] + [(f"one prompt of {n}", lambda n=n: single(n)) for n in args.lengths]
    print(f"{kernels.describe()}; median of {args.repeats}, alternated")
    print("| workload | decode rows | chunked (SDPA) | decode / chunked |")
    print("| --- | --- | --- | --- |")
    count = 0
    for name, make in workloads:
        prompt_step(llm, make(), args.as_decode, "warm-a")
        prompt_step(llm, make(), 0, "warm-b")
        rows, chunked = [], []
        for _ in range(args.repeats):
            count += 1
            rows.append(prompt_step(llm, make(), args.as_decode, f"a{count}"))
            chunked.append(prompt_step(llm, make(), 0, f"b{count}"))
        a, b = statistics.median(rows), statistics.median(chunked)
        print(f"| {name} | {a * 1e3:.1f} ms | {b * 1e3:.1f} ms | {a / b:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
