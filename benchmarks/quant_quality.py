"""Quantization quality of SmolLM2-135M-Instruct, on the CPU: each weight format against float32.

    .venv/bin/python benchmarks/quant_quality.py            # 16 prompts x 32 tokens, the shipped text
    .venv/bin/python benchmarks/quant_quality.py --quick    # 4 prompts x 16 tokens

The reference is float32 with dense weights: the shipped GGUF file's Q4_1 (and Q8_0 head) blocks dequantized
exactly, run through PyTorch ops. Every other row is measured against it in the same run:

- greedy agreement: the reference's greedy continuation of each prompt is fed to the variant (teacher forcing)
  and we count the positions where the variant's argmax is the reference's token; "same text" counts the
  prompts whose whole free-running greedy continuation is identical;
- perplexity of benchmarks/data/perplexity.txt (our own prose, shipped with the project), one pass of its
  tokens, each predicted from all before it.

The int8, int4 and q8_0 rows re-quantize the float32 weights at load time (EngineConfig.quantization); since the
file's weights are Q4_1 already, they show the extra error each format adds on top of that, not its error on
an unquantized checkpoint. Their linears run through the CPU block kernel (the values the Triton matmuls read).
The int8-activations row keeps the file's blocks and rounds each linear's input to int8 per 32 columns
(EngineConfig.int8_activations; a CPU with AVX-512 VNNI and VBMI).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from workers import LLM, SamplingParams
from workers.engine.model_runner import ModelRunner
from workers.model.attention import AttentionMetadata, PrefillChunk

TEXT = Path(__file__).resolve().parent / "data" / "perplexity.txt"
PROMPTS = [
    "What is the capital of France?", "Explain how a bicycle stays upright.", "Write a haiku about winter.",
    "What are three uses of baking soda?", "How does a refrigerator work?", "Why do cats purr?",
    "What is photosynthesis?", "Give me tips for a job interview.", "Describe the city of Tokyo.",
    "What causes earthquakes?", "How do bees make honey?", "Explain what DNA is.",
    "How do solar panels work?", "Why do leaves change color in autumn?", "What is the internet?",
    "How can I sleep better?",
]
# name -> EngineConfig fields (the reference first).
VARIANTS = {
    "fp32 (dense, reference)": {"kernels": "torch", "dtype": "float32"},
    "GGUF Q4_1/Q8_0 blocks (shipped)": {"dtype": "float32"},
    "GGUF blocks, int8 activations": {"dtype": "float32", "int8_activations": True},
    "bf16": {"kernels": "torch", "dtype": "bfloat16"},
    "GGUF Q8_0 (re-quantized)": {"dtype": "float32", "quantization": "q8_0"},
    "int8 W8A16 per channel": {"dtype": "float32", "quantization": "int8"},
    "int4 W4A16 g=128 (64 where 128 does not divide)": {"dtype": "float32", "quantization": "int4"},
}


@torch.inference_mode()
def all_logits(runner: ModelRunner, ids: list[int]) -> torch.Tensor:
    """float32 logits [len(ids), vocab]: every position's next-token prediction, in one prefill."""
    bs, n = runner.block_size, len(ids)
    table = list(range(-(-n // bs)))
    blocks = torch.tensor(table)
    slots = torch.tensor([table[p // bs] * bs + p % bs for p in range(n)])
    meta = AttentionMetadata(slot_mapping=slots, prefills=[PrefillChunk(0, n, n, blocks)],
                             prefill_query_start=torch.tensor([0, n]), prefill_block_tables=blocks.unsqueeze(0),
                             prefill_context_lens=torch.tensor([n]), max_prefill_len=n)
    return runner.model(torch.tensor(ids), torch.arange(n), runner.k_cache, runner.v_cache, meta,
                        torch.arange(n)).float()


def perplexity(runner: ModelRunner, ids: list[int]) -> float:
    logits = all_logits(runner, ids)[:-1]
    nll = torch.nn.functional.cross_entropy(logits, torch.tensor(ids[1:]))
    return math.exp(float(nll))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--only", nargs="*", default=None, help="rows whose name contains one of these (the fp32 "
                    "reference always runs)")
    args = ap.parse_args()
    variants = {name: fields for i, (name, fields) in enumerate(VARIANTS.items())
                if i == 0 or args.only is None or any(o in name for o in args.only)}
    prompts = PROMPTS[:4] if args.quick else PROMPTS
    tokens = 16 if args.quick else args.tokens
    params = SamplingParams(max_tokens=tokens, temperature=0, ignore_eos=True)

    reference: list[list[int]] = []
    chats: list[list[int]] = []
    rows = []
    for name, fields in variants.items():
        start = time.perf_counter()
        llm = LLM("smollm2-135m-instruct", num_threads=args.threads, num_kv_blocks=256, **fields)
        runner = llm.engine.runner
        if not chats:
            chats = [runner.tokenizer.apply_chat_template([{"role": "user", "content": p}]) for p in prompts]
            text_ids = runner.tokenizer.encode(TEXT.read_text())
        outputs = [o.outputs[0].token_ids for o in llm.generate(chats, params)]
        if not reference:
            reference = outputs
        agree = total = 0
        for chat, ref in zip(chats, reference):
            logits = all_logits(runner, chat + ref)[len(chat) - 1:-1]
            agree += int((logits.argmax(dim=1) == torch.tensor(ref)).sum())
            total += len(ref)
        same = sum(o == r for o, r in zip(outputs, reference))
        ppl = perplexity(runner, text_ids)
        rows.append((name, agree / total, same, ppl, runner.kernels.describe(), time.perf_counter() - start))
        print(f"{name:34s} agreement {agree / total:7.2%}  same text {same:2d}/{len(prompts)}  "
              f"perplexity {ppl:7.3f}  [{rows[-1][4]}; {rows[-1][5]:.0f} s]", flush=True)
        del llm, runner
    print(f"\n{len(prompts)} prompts x {tokens} greedy tokens; perplexity over {len(text_ids)} tokens of {TEXT.name}\n")
    print("| weights | greedy agreement with fp32 | same text | perplexity | ratio to fp32 |")
    print("| --- | --- | --- | --- | --- |")
    base = rows[0][3]
    for name, agree, same, ppl, _, _ in rows:
        print(f"| {name} | {agree:.2%} | {same}/{len(prompts)} | {ppl:.3f} | {ppl / base:.4f} |")


if __name__ == "__main__":
    main()
