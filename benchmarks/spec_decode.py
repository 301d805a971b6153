"""Speculative decoding (n-gram / prompt lookup by default) against plain decoding, on the same engine settings.

    .venv/bin/python benchmarks/spec_decode.py                       # 3 rounds of (a) and (b)
    .venv/bin/python benchmarks/spec_decode.py --quick               # a smoke run
    .venv/bin/python benchmarks/spec_decode.py --spec '{"method": "draft", "num_layers": 10, "num_tokens": 3}'

(a) batch 1, input-grounded: 8 requests that rewrite, extract from, summarise or edit a passage given in the
    prompt (code edits included), one at a time, greedy, up to 128 output tokens (EOS may end them early);
(b) the 32 chat requests of benchmarks/engine_throughput.py at full batch (16..256 output tokens, greedy,
    EOS ignored), all submitted at once.
Each round runs off and on back to back, alternating which goes first; the figures are medians over rounds.
Acceptance rate: accepted draft tokens / draft tokens. Mean acceptance length: tokens a verification step
keeps, the target's own included (1 + accepted / verifications), as vLLM reports it.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from prometheus_client import REGISTRY

from benchmarks.engine_throughput import bench_engine, build_requests
from workers import LLM, SamplingParams

MODEL = "smollm2-135m-instruct"
NGRAM = {"method": "ngram", "num_tokens": 4, "lookup_min": 2, "lookup_max": 4}

PASSAGE = ("The city council met on Tuesday to discuss the new bicycle lanes on Main Street. Mayor Elena Park "
           "said the lanes would be finished by the end of June, and that the project would cost about two "
           "million dollars. Several shop owners complained that the construction had reduced the number of "
           "customers, but the council promised to add more parking spaces near the market.")
CODE = '''def total_price(items, tax):
    total = 0
    for item in items:
        total = total + item["price"] * item["count"]
    total = total + total * tax
    return total'''
GROUNDED = [
    f"Rewrite the following text in the past tense. Keep everything else the same.\n\n{PASSAGE}",
    "Copy the following text, fixing any spelling mistakes:\n\nThe citty council met on Tusday to discuss the "
    "new bycicle lanes on Main Stret. The mayor said the lanes wuold be finished by the end of June.",
    f"Extract every sentence of the following text that mentions money or a date, word for word.\n\n{PASSAGE}",
    f"Summarize the following text in two sentences, reusing its wording.\n\n{PASSAGE}",
    f"Rename the variable `total` to `amount` in this Python function and show the whole function.\n\n{CODE}",
    f"Add type hints to this Python function and show the whole function.\n\n{CODE}",
    f"Add a docstring to this Python function and show the whole function.\n\n{CODE}",
    "Turn this list into a Markdown bulleted list, one item per line: apples, bananas, cherries, dates, "
    "elderberries, figs, grapes, honeydew melons, kiwis, lemons, mangoes.",
]


def spec_counts() -> tuple[float, float, float]:
    """(verifications, draft tokens, accepted tokens) so far, over every engine of this process."""
    def get(name: str) -> float:
        return REGISTRY.get_sample_value(f"tollgate:spec_decode_{name}_total", {"model_name": MODEL}) or 0.0

    return get("num_drafts"), get("num_draft_tokens"), get("num_accepted_tokens")


def bench_grounded(llm: LLM, prompts: list[list[int]], max_tokens: int) -> float:
    """Tokens/s over the prompts run one at a time (batch 1)."""
    params = SamplingParams(max_tokens=max_tokens, temperature=0)
    start, tokens = time.perf_counter(), 0
    for prompt in prompts:
        tokens += len(llm.generate(prompt, params)[0].outputs[0].token_ids)
    return tokens / (time.perf_counter() - start)


def measure(fn, llm: LLM) -> tuple[float, tuple[float, float, float]]:
    before = spec_counts()
    rate = fn(llm)
    return rate, tuple(b - a for a, b in zip(before, spec_counts()))


def report(name: str, off: list[float], on: list[float], counts: list[tuple[float, float, float]],
           target: str) -> None:
    off_m, on_m = statistics.median(off), statistics.median(on)
    drafts, draft_tokens, accepted = (sum(c[i] for c in counts) for i in range(3))
    rate = accepted / draft_tokens if draft_tokens else 0.0
    length = 1 + accepted / drafts if drafts else 1.0
    print(f"{name}: off {off_m:7.1f} tok/s, on {on_m:7.1f} tok/s, ratio on/off {on_m / off_m:.2f}x ({target}); "
          f"acceptance rate {rate:.2f} ({accepted:.0f}/{draft_tokens:.0f} draft tokens), "
          f"mean acceptance length {length:.2f} ({drafts:.0f} verifications)")
    print(f"    per round off: {', '.join(f'{x:.1f}' for x in off)}; on: {', '.join(f'{x:.1f}' for x in on)}")


def run_pair(name: str, fn, off_llm: LLM, on_llm: LLM, rounds: int, target: str) -> None:
    off, on, counts = [], [], []
    for r in range(rounds):
        order = [(off_llm, off), (on_llm, on)] if r % 2 == 0 else [(on_llm, on), (off_llm, off)]
        for llm, sink in order:
            rate, delta = measure(fn, llm)
            sink.append(rate)
            if llm is on_llm:
                counts.append(delta)
    report(name, off, on, counts, target)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 round, 3 grounded prompts of 48 tokens, 8 requests")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=128, help="(a)'s output cap")
    ap.add_argument("--requests", type=int, default=32, help="(b)'s requests")
    ap.add_argument("--spec", type=json.loads, default=NGRAM, help="EngineConfig.speculative, as JSON")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--skip", choices=("a", "b"), help="leave one part out")
    args = ap.parse_args()
    grounded, min_len, max_len = GROUNDED, 16, 256
    if args.quick:
        args.rounds, args.max_tokens, args.requests, grounded, min_len, max_len = 1, 48, 8, GROUNDED[:3], 8, 32
    torch.set_num_threads(args.threads)

    common = dict(dtype="float32", num_threads=args.threads, max_num_seqs=64, max_num_batched_tokens=2048)
    off_llm = LLM(MODEL, **common)
    on_llm = LLM(MODEL, speculative=args.spec, **common)
    tok = off_llm.tokenizer
    print(f"speculative={on_llm.engine.config.speculative}, float32, {args.threads} threads, "
          f"medians of {args.rounds} interleaved rounds")
    prompts = [tok.apply_chat_template([{"role": "user", "content": p}]) for p in grounded]
    requests = build_requests(tok, args.requests, min_len, max_len, seed=0)
    for llm in (off_llm, on_llm):  # warm-up: first-call allocations, not measured
        llm.generate(prompts[0], SamplingParams(max_tokens=8, temperature=0))
        bench_engine(llm, requests[:2])

    if args.skip != "a":
        run_pair(f"(a) batch 1, {len(prompts)} input-grounded requests, <= {args.max_tokens} tokens",
                 lambda llm: bench_grounded(llm, prompts, args.max_tokens), off_llm, on_llm, args.rounds,
                 "target >= 1.5x")
    if args.skip != "b":
        total = sum(n for _, n in requests)
        run_pair(f"(b) {len(requests)} chat requests at full batch, {total} tokens, ignore_eos",
                 lambda llm: bench_engine(llm, requests), off_llm, on_llm, args.rounds, "target >= 0.97x")


if __name__ == "__main__":
    main()
