"""Prefix reuse with the real model: TTFT of a request whose ~200-token system prompt is already
cached, against the first request that had to compute it; then (--waves) a wave of 16 short chats
prefilled at once, reusing the head of a cached block past the full ones, against the same wave with
only full blocks reused, alternated in one run.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/prefix_reuse.py [--runs 5] [--dtype float32] [--waves 6]

Each run uses its own system prompt (a distinct opening line), so the first request of a run
always starts cold and the second finds the first one's blocks. Each wave runs under a salt of its
own after one warm-up chat under it (the chat template's head cached, nothing of the wave's own).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workers.config import EngineConfig
from workers.engine.llm_engine import LLMEngine
from workers.sampling_params import SamplingParams

sys.path.insert(0, str(Path(__file__).resolve().parent))
import chat_load

_POLICY = (
    "You are the support assistant of Tollgate, a self-hosted model service. Answer briefly and "
    "politely. Never invent prices: quote only the catalogue. If a question is about billing, say "
    "that invoices are issued monthly and that usage is counted in prompt and completion tokens. "
    "If a question is about quotas, explain that each API key has a rate limit in requests per "
    "minute and a token budget per day, and that exceeding either returns HTTP 429 with a "
    "Retry-After header. If the user asks for model details, list the available models and their "
    "context lengths. Refuse requests for other customers' data. Keep answers under three "
    "sentences unless the user asks for more. Use plain English without markdown tables. When "
    "unsure, say so and suggest contacting the operator of this deployment. "
)


def system_prompt(engine: LLMEngine, run: int, target_tokens: int = 200) -> str:
    """A system prompt of about target_tokens tokens, unique to this run from its first token."""
    text = f"Session {run}. " + _POLICY * 3
    ids = engine.tokenizer.encode(text)[:target_tokens]
    return engine.tokenizer.decode(ids)


def ttft(engine: LLMEngine, request_id: str, system: str, question: str) -> tuple[float, int, int]:
    """Seconds from arrival to first token, prefix blocks hit, prompt tokens served from cache."""
    hits_before = engine.block_manager.stats.hits
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    engine.add_request(request_id, messages=messages, params=SamplingParams(max_tokens=1, temperature=0))
    final = None
    while engine.has_unfinished_requests():
        final = next((o for o in engine.step() if o.finished), final)
    return final.metrics.time_to_first_token, engine.block_manager.stats.hits - hits_before, final.num_cached_tokens


def wave(engine: LLMEngine, trial: int, chats: list[list[dict]], partial: bool) -> tuple[float, int, int]:
    """Seconds to prefill the chats at once (max_tokens=1), prompt tokens computed, tokens reused from heads."""
    salt = f"wave-{trial}"
    greedy = SamplingParams(max_tokens=1, temperature=0)
    bm = engine.block_manager
    find_partial = bm.find_partial
    if not partial:
        bm.find_partial = lambda seq, cached: None  # type: ignore[method-assign]
    try:
        engine.add_request(f"w{trial}-warm", messages=[{"role": "user", "content": "Hello there."}], params=greedy,
                           cache_salt=salt)
        while engine.has_unfinished_requests():
            engine.step()
        before = bm.stats.partial_tokens
        for i, messages in enumerate(chats):
            engine.add_request(f"w{trial}-{i}", messages=messages, params=greedy, cache_salt=salt)
        finals = []
        start = time.perf_counter()
        while engine.has_unfinished_requests():
            finals += [o for o in engine.step() if o.finished]
        elapsed = time.perf_counter() - start
        computed = sum(o.num_prompt_tokens - o.num_cached_tokens for o in finals)
        return elapsed, computed, bm.stats.partial_tokens - before
    finally:
        bm.find_partial = find_partial  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--num-kv-blocks", type=int, default=256)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (1 on a busy machine)")
    parser.add_argument("--waves", type=int, default=6, help="waves of 16 chats, alternating with and without "
                        "reuse of a cached block's head (0: none)")
    args = parser.parse_args()
    engine = LLMEngine(EngineConfig(model=args.model, dtype=args.dtype, num_kv_blocks=args.num_kv_blocks,
                                    num_threads=args.threads))
    ttft(engine, "warmup", "Warm up.", "Hi")
    cold, warm = [], []
    for run in range(args.runs):
        system = system_prompt(engine, run)
        t1, hits1, _ = ttft(engine, f"{run}-first", system, "How are tokens counted?")
        t2, hits2, cached2 = ttft(engine, f"{run}-second", system, "What happens past my quota?")
        cold.append(t1)
        warm.append(t2)
        print(f"run {run}: first {t1 * 1000:7.1f} ms ({hits1} blocks reused)   "
              f"second {t2 * 1000:7.1f} ms ({hits2} blocks reused, {cached2} prompt tokens cached)")
    c, w = statistics.median(cold), statistics.median(warm)
    bm = engine.block_manager
    print(f"median TTFT: first {c * 1000:.1f} ms, second {w * 1000:.1f} ms, ratio {c / w:.2f}x")
    print(f"prefix cache: {bm.stats.hits} of {bm.stats.queries} blocks hit; "
          f"{bm.num_used_blocks} blocks in use at the end")
    if args.waves:
        chats = chat_load.chats(64)
        times: dict[bool, list[float]] = {True: [], False: []}
        for trial in range(args.waves):
            partial = trial % 2 == 0
            batch = chats[16 * (trial // 2 % 4): 16 * (trial // 2 % 4) + 16]  # both modes get the same chats
            seconds, computed, reused = wave(engine, trial, batch, partial)
            times[partial].append(seconds)
            print(f"wave {trial}: {'heads reused' if partial else 'full blocks only'}: {seconds * 1000:7.1f} ms, "
                  f"{computed} prompt tokens computed, {reused} reused from block heads")
        on, off = statistics.median(times[True]), statistics.median(times[False])
        print(f"median wave prefill: full blocks only {off * 1000:.1f} ms, with block heads {on * 1000:.1f} ms, "
              f"ratio {off / on:.2f}x")


if __name__ == "__main__":
    main()
