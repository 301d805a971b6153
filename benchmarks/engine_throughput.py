"""Throughput of our engine against transformers on the same GGUF weights (float32, greedy, ignore_eos).

    .venv/bin/python benchmarks/engine_throughput.py            # 32 requests, outputs uniform 16..256
    .venv/bin/python benchmarks/engine_throughput.py --quick    # a smoke run: 8 short requests

(a) transformers, one request at a time (on a subset; its tokens/s is extrapolated: each request runs alone,
    so the rate does not depend on which requests are in the subset beyond their lengths),
(b) transformers, static batches of 8 with left padding (a batch runs until its longest request is done;
    only each request's own wanted tokens count),
(c) our engine through workers.LLM, all requests submitted at once, as it serves by default: compiled CPU
    kernels, matmuls reading the GGUF weights in their Q4_1/Q8_0 blocks. Those values are the dense float32
    weights (a) and (b) use, bit for bit, and all arithmetic is float32; --dense-engine also measures the
    engine with dense float32 weights (oneDNN matmuls), to show what each part contributes.
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

import torch

from workers import LLM, SamplingParams
from workers.model.registry import CATALOGUE

QUESTIONS = [
    "What is the capital of France?", "Explain how a bicycle stays upright.", "Write a haiku about winter.",
    "What are three uses of baking soda?", "How does a refrigerator work?", "Tell me a joke about computers.",
    "What is photosynthesis?", "Give me tips for a job interview.", "Why do cats purr?",
    "Describe the city of Tokyo.", "What is machine learning?", "How do I make a paper airplane?",
    "What causes earthquakes?", "Write a limerick about a frog.", "Explain the rules of chess briefly.",
    "What is the Pythagorean theorem?", "How can I sleep better?", "What is a black hole?",
    "Suggest a healthy breakfast.", "How do bees make honey?", "What is the stock market?",
    "Explain what DNA is.", "Write a short story opening about a dragon.", "Why is exercise important?",
    "How do solar panels work?", "What are the planets in our solar system?", "How do I learn a new language?",
    "What is the difference between weather and climate?", "Explain what an API is.",
    "Give me a recipe for pancakes.", "Why do leaves change color in autumn?", "What is the internet?",
]


def build_requests(tokenizer, n: int, min_len: int, max_len: int, seed: int) -> list[tuple[list[int], int]]:
    rng = random.Random(seed)
    return [(tokenizer.apply_chat_template([{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}]),
             rng.randint(min_len, max_len)) for i in range(n)]


def hf_generate(model, prompts: list[list[int]], new_tokens: int, pad: int) -> None:
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    with torch.inference_mode():
        # min_new_tokens == max_new_tokens: transformers' way to ignore EOS.
        model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                       do_sample=False, pad_token_id=pad)


def bench_hf_single(model, requests, pad: int) -> float:
    start, tokens = time.perf_counter(), 0
    for prompt, n in requests:
        hf_generate(model, [prompt], n, pad)
        tokens += n
    return tokens / (time.perf_counter() - start)


def bench_hf_static(model, requests, pad: int, batch: int) -> float:
    start, tokens = time.perf_counter(), 0
    for i in range(0, len(requests), batch):
        group = requests[i:i + batch]
        hf_generate(model, [p for p, _ in group], max(n for _, n in group), pad)
        tokens += sum(n for _, n in group)
    return tokens / (time.perf_counter() - start)


def bench_engine(llm: LLM, requests) -> float:
    params = [SamplingParams(max_tokens=n, temperature=0, ignore_eos=True) for _, n in requests]
    start = time.perf_counter()
    outputs = llm.generate([p for p, _ in requests], params)
    elapsed = time.perf_counter() - start
    produced = sum(len(o.outputs[0].token_ids) for o in outputs)
    wanted = sum(n for _, n in requests)
    if produced != wanted:
        raise RuntimeError(f"engine produced {produced} tokens, {wanted} were asked for")
    return produced / elapsed


def bench_engine_single(llm: LLM, prompt: list[int], n: int) -> tuple[float, float]:
    """(time to first token in s, decode tokens/s after it) for one request alone."""
    engine = llm.engine
    engine.add_request("single", prompt, params=SamplingParams(max_tokens=n, temperature=0, ignore_eos=True))
    start = time.perf_counter()
    first = None
    while engine.has_unfinished_requests():
        for out in engine.step():
            if first is None and out.num_output_tokens:
                first = time.perf_counter()
    end = time.perf_counter()
    return first - start, (n - 1) / (end - first)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="8 requests of 8..32 tokens, small HF subsets")
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--min-tokens", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--hf-single-subset", type=int, default=6, help="requests (a) runs; its rate is extrapolated")
    ap.add_argument("--hf-batch", type=int, default=8)
    ap.add_argument("--hf-batches", type=int, default=None,
                    help="static batches (b) runs, default all; fewer: its rate is extrapolated")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-hf", action="store_true", help="only the engine numbers")
    ap.add_argument("--dense-engine", action="store_true",
                    help="also run the engine with dense float32 weights (block_quant_matmul=False)")
    args = ap.parse_args()
    if args.quick:
        args.requests, args.min_tokens, args.max_tokens, args.hf_single_subset = 8, 8, 32, 2
    torch.set_num_threads(args.threads)

    llm = LLM("smollm2-135m-instruct", dtype="float32", num_threads=args.threads, max_num_seqs=64,
              max_num_batched_tokens=2048)
    requests = build_requests(llm.tokenizer, args.requests, args.min_tokens, args.max_tokens, args.seed)
    total = sum(n for _, n in requests)
    print(f"{len(requests)} chat requests, {total} output tokens (uniform {args.min_tokens}..{args.max_tokens}), "
          f"float32, greedy, ignore_eos, {args.threads} threads")
    bench_engine(llm, requests[:2])  # warm-up: first-call allocations, not measured

    ttft, decode = bench_engine_single(llm, requests[0][0], 64 if args.quick else 128)
    engine_tps = bench_engine(llm, requests)
    runner = llm.engine.runner
    path = runner.kernels.describe() + ", " + (
        "GGUF-blocked weights" if any(type(m).__name__ == "BlockQuantLinear" for m in runner.model.modules())
        else "dense float32 weights")
    print(f"(c) engine ({path}): {engine_tps:8.1f} tok/s")
    print(f"    engine single request:          TTFT {ttft * 1e3:.0f} ms, decode {decode:.1f} tok/s")
    if args.dense_engine:
        dense = LLM("smollm2-135m-instruct", dtype="float32", num_threads=args.threads, max_num_seqs=64,
                    max_num_batched_tokens=2048, block_quant_matmul=False)
        bench_engine(dense, requests[:2])
        print(f"(c') engine, dense float32 weights: {bench_engine(dense, requests):8.1f} tok/s")
        del dense
    if args.skip_hf:
        return

    from transformers import AutoModelForCausalLM

    path = CATALOGUE["smollm2-135m-instruct"].path()
    hf = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32).eval()
    pad = min(llm.tokenizer.eos_token_ids)
    hf_generate(hf, [requests[0][0]], 4, pad)  # warm-up
    subset = requests[:args.hf_single_subset]
    single_tps = bench_hf_single(hf, subset, pad)
    print(f"(a) transformers one at a time:     {single_tps:8.1f} tok/s "
          f"(measured on {len(subset)} of {len(requests)} requests, {sum(n for _, n in subset)} tokens; extrapolated)")
    batched = requests[:args.hf_batches * args.hf_batch] if args.hf_batches else requests
    static_tps = bench_hf_static(hf, batched, pad, args.hf_batch)
    note = ("" if len(batched) == len(requests)
            else f" (measured on {len(batched)} of {len(requests)} requests; extrapolated)")
    print(f"(b) transformers static batches/{args.hf_batch}: {static_tps:8.1f} tok/s{note}")
    # Re-measure the engine after the baselines, so slow drift of a shared machine shows up in the ratio.
    engine_again = bench_engine(llm, requests)
    engine_med = statistics.median([engine_tps, engine_again])
    print(f"(c) engine, again:                  {engine_again:8.1f} tok/s")
    print(f"ratio c/a = {engine_med / single_tps:.1f}x   ratio c/b = {engine_med / static_tps:.1f}x "
          f"(c = median of the two engine runs)")


if __name__ == "__main__":
    main()
