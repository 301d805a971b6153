"""The CPU decode attention (workers/kernels/cpu_ops.c) as a decode step meets it: 16 sequences, each query token
against its context in the paged cache, over 30 layers' caches whose blocks are scattered as a busy pool leaves
them, so the keys and values come from memory rather than a warm cache. The baseline, in the same run: torch's
scaled_dot_product_attention over the same contexts gathered into dense tensors (what a gather-then-SDPA path
costs), with its gather timed apart.

    .venv/bin/python benchmarks/decode_attention.py                      # contexts 128, 512, 1024
    .venv/bin/python benchmarks/decode_attention.py --contexts 256 --repeats 21

Prints, per context, the median time of one step's attention (all 30 layers) for each, the paged kernel's time as
a ratio of SDPA's, and the rate at which the kernel reads keys and values (GB/s).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch
import torch.nn.functional as F

from workers.kernels import cpu

# SmolLM2-135M's attention: 9 query heads over 3 KV heads of 64, 30 layers; the engine's block size.
LAYERS, HEADS, KV_HEADS, HEAD_DIM, BLOCK = 30, 9, 3, 64, 16


def measure(kernels: cpu.CpuKernels, ctx: int, n: int, repeats: int) -> tuple[float, float, float]:
    """Median seconds of one step's attention over all layers: the paged kernel, the gather, SDPA on the gathered."""
    scale = HEAD_DIM ** -0.5
    per_seq = -(-ctx // BLOCK)
    num_blocks = 2 * n * per_seq + 8  # half the pool in use, the rest free: blocks far apart
    k_caches = [torch.randn(KV_HEADS, num_blocks, BLOCK, HEAD_DIM) for _ in range(LAYERS)]
    v_caches = [torch.randn(KV_HEADS, num_blocks, BLOCK, HEAD_DIM) for _ in range(LAYERS)]
    tables = torch.randperm(num_blocks)[: n * per_seq].view(n, per_seq)
    lens = torch.full((n,), ctx, dtype=torch.long)
    q = torch.randn(n, HEADS, HEAD_DIM)
    flat = tables.reshape(-1)

    def paged() -> None:
        for layer in range(LAYERS):
            kernels.paged_decode_attention(q, k_caches[layer], v_caches[layer], tables, lens, scale)

    def gathered() -> list[tuple[torch.Tensor, torch.Tensor]]:
        out = []
        for layer in range(LAYERS):
            k = k_caches[layer][:, flat].view(KV_HEADS, n, per_seq * BLOCK, HEAD_DIM)[:, :, :ctx]
            v = v_caches[layer][:, flat].view(KV_HEADS, n, per_seq * BLOCK, HEAD_DIM)[:, :, :ctx]
            out.append((k.transpose(0, 1).contiguous(), v.transpose(0, 1).contiguous()))
        return out

    def sdpa(dense: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        for k, v in dense:
            F.scaled_dot_product_attention(q.unsqueeze(2), k, v, scale=scale, enable_gqa=True)

    # The paged kernel's answer against SDPA's, once: the benchmark times the right thing.
    dense = gathered()
    want = F.scaled_dot_product_attention(q.unsqueeze(2), *dense[0], scale=scale, enable_gqa=True).squeeze(2)
    got = kernels.paged_decode_attention(q, k_caches[0], v_caches[0], tables, lens, scale)
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    t_paged, t_gather, t_sdpa = [], [], []
    for _ in range(repeats):  # alternated, so a slow stretch of the machine hits all three
        start = time.perf_counter()
        paged()
        t_paged.append(time.perf_counter() - start)
        start = time.perf_counter()
        dense = gathered()
        t_gather.append(time.perf_counter() - start)
        start = time.perf_counter()
        sdpa(dense)
        t_sdpa.append(time.perf_counter() - start)
    return statistics.median(t_paged), statistics.median(t_gather), statistics.median(t_sdpa)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--contexts", type=int, nargs="+", default=[128, 512, 1024])
    ap.add_argument("--sequences", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=11)
    args = ap.parse_args()
    kernels = cpu.load()
    if kernels is None:
        print("no C compiler: the CPU kernels are not built here")
        return 1
    torch.manual_seed(0)
    n = args.sequences
    print(f"{n} sequences, {LAYERS} layers, {HEADS} heads over {KV_HEADS} KV heads of {HEAD_DIM}, blocks of {BLOCK};"
          f" {torch.get_num_threads()} threads; median of {args.repeats}")
    print("| context | paged kernel | gather | SDPA on gathered | kernel / SDPA | kernel reads |")
    print("| --- | --- | --- | --- | --- | --- |")
    for ctx in args.contexts:
        a, g, s = measure(kernels, ctx, n, args.repeats)
        kv_bytes = 2 * LAYERS * n * KV_HEADS * ctx * HEAD_DIM * 4
        print(f"| {ctx} | {a * 1e3:.2f} ms | {g * 1e3:.2f} ms | {s * 1e3:.2f} ms | {a / s:.2f} |"
              f" {kv_bytes / a / 1e9:.1f} GB/s |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
