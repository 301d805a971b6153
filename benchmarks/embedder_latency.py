"""One question through the sentence embedder: ONNX Runtime (the default) against PyTorch bfloat16 and float32,
alternated per call so all three see the same machine; p50/p99 per question length and the ratios.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/embedder_latency.py [--calls 200] [--threads 1]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.embedding import Embedder, EmbedderConfig

QUESTIONS = {
    "short (9 words)": "How do I reset my password on the website?",
    "long (21 words)": "We are planning a two-week road trip through the Scottish Highlands in October. "
                       "Is that a good time of year, weather-wise?",
}
RUNTIMES = {
    "onnx": dict(runtime="onnx"),
    "torch bfloat16": dict(runtime="torch", dtype="bfloat16"),
    "torch float32": dict(runtime="torch", dtype="float32"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200, help="calls per runtime and question")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    embedders = {name: Embedder(EmbedderConfig(num_threads=args.threads, **kw)) for name, kw in RUNTIMES.items()}
    reference = embedders["torch float32"]
    for label, text in QUESTIONS.items():
        for e in embedders.values():  # warm-up
            for _ in range(5):
                e.embed_one(text)
        times: dict[str, list[float]] = {name: [] for name in embedders}
        for _ in range(args.calls):
            for name, e in embedders.items():
                started = time.perf_counter()
                e.embed_one(text)
                times[name].append(time.perf_counter() - started)
        base = np.percentile(times["onnx"], 50)
        print(f"{label}:")
        for name, t in times.items():
            cosine = float(embedders[name].embed_one(text) @ reference.embed_one(text))
            p50, p99 = np.percentile(t, 50) * 1e3, np.percentile(t, 99) * 1e3
            print(f"  {name:<15} p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  ({p50 / (base * 1e3):.2f}x onnx's p50)"
                  f"  cosine to torch float32 {cosine:.6f}")
    print(f"({args.calls} calls each, alternated; {args.threads} thread(s))")


if __name__ == "__main__":
    main()
