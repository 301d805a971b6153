"""llama.cpp (llama-cpp-python) on the benchmark's requests, greedy, EOS ignored; run by benchmarks/baselines.py
with the Python of the venv llama-cpp-python is installed in (benchmarks/README.md tells how)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from protocol import serve

state: dict = {}


def load(msg: dict) -> dict:
    from llama_cpp import Llama

    start = time.perf_counter()
    state["llm"] = Llama(model_path=msg["model"], n_threads=msg["threads"], n_threads_batch=msg["threads"],
                         n_ctx=2048, n_batch=512, verbose=False)
    return {"ok": True, "load_s": time.perf_counter() - start}


def _one(llm, prompt: list[int], n: int) -> tuple[float, float]:
    """(seconds to the first token, seconds for the whole request); n tokens, EOS ignored."""
    start = time.perf_counter()
    first = None
    # generate() yields sampled tokens forever (stopping on EOS is its callers' job); top_k=1 is greedy.
    tokens = llm.generate(prompt, top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0, reset=True)
    for produced, _ in enumerate(tokens, start=1):
        if first is None:
            first = time.perf_counter()
        if produced == n:
            break
    return first - start, time.perf_counter() - start


def run(msg: dict) -> dict:
    if msg["mode"] != "single":
        raise ValueError("the llama.cpp runner serves one request at a time (mode single)")
    llm = state["llm"]
    total = ttft = 0.0
    tokens = 0
    for prompt, n in msg["requests"]:
        first, whole = _one(llm, prompt, n)
        total += whole
        ttft += first
        tokens += n
    decode_tokens = tokens - len(msg["requests"])
    return {"tokens": tokens, "seconds": total, "ttft_s": ttft / len(msg["requests"]),
            "decode_tok_s": decode_tokens / (total - ttft)}


if __name__ == "__main__":
    serve({"load": load, "run": run})
