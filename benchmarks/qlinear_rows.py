"""The block-quantized CPU linear (workers/kernels/cpu_qlinear.c) at SmolLM2-135M's shapes, from a decode step's
rows to a prefill's, against torch's float32 matmul (oneDNN/MKL) on the same weights dequantized, in the same run.

    .venv/bin/python benchmarks/qlinear_rows.py                       # every core, Q4_1 (most of the GGUF's layers)
    .venv/bin/python benchmarks/qlinear_rows.py --qtype Q8_0 --rows 16 1024 --threads 1

Prints, per shape and row count, the median time of each, GFLOP/s, and ours as a ratio of torch's time (below 1:
ours is faster). The weights are random, quantized with gguf's own quantizer.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch
from gguf import GGMLQuantizationType
from gguf.quants import quantize

from workers.kernels import cpu
from workers.model import block_quant

# (name, in_features, out_features): q|k|v, o, gate|up and down of one layer (hidden 576, 9 + 3 + 3 heads of 64,
# intermediate 1536).
SHAPES = [("qkv", 576, 960), ("o", 576, 576), ("gate_up", 576, 3072), ("down", 1536, 576)]


def timed(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--qtype", default="Q4_1", choices=["Q4_1", "Q4_0", "Q8_0"])
    ap.add_argument("--rows", type=int, nargs="+", default=[16, 128, 512, 1024])
    ap.add_argument("--threads", type=int, default=None, help="default: torch's (every core)")
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    kernels = cpu.load()
    if kernels is None:
        print("no C compiler: the CPU kernels did not build")
        return 1
    qtype = GGMLQuantizationType[args.qtype]
    print(f"{args.qtype}, {torch.get_num_threads()} threads, median of {args.repeats}")
    print("| shape | rows | ours | torch fp32 | ours GFLOP/s | torch GFLOP/s | ours / torch time |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    totals: dict[int, list[float]] = {m: [0.0, 0.0] for m in args.rows}
    for name, k, n in SHAPES:
        g = torch.Generator().manual_seed(0)
        blocks = block_quant.decode(quantize(torch.randn(n, k, generator=g).numpy(), qtype), qtype, (n, k))
        packed, dense = block_quant.pack(blocks), block_quant.dequantize(blocks).contiguous()
        for m in args.rows:
            x = torch.randn(m, k, generator=g)
            ours = timed(lambda x=x, w=packed: kernels.block_quant_linear(x, w.q, w.dm, w.bits), args.repeats)
            theirs = timed(lambda x=x, w=dense: torch.mm(x, w.t()), args.repeats)
            flops = 2.0 * m * k * n
            totals[m][0] += ours
            totals[m][1] += theirs
            print(f"| {name} {k}x{n} | {m} | {ours * 1e6:,.0f} µs | {theirs * 1e6:,.0f} µs | {flops / ours / 1e9:.0f} "
                  f"| {flops / theirs / 1e9:.0f} | {ours / theirs:.2f} |")
    for m, (ours, theirs) in totals.items():
        print(f"one layer's four linears at {m} rows: ours {ours * 1e3:.2f} ms, torch {theirs * 1e3:.2f} ms, "
              f"ratio {ours / theirs:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
