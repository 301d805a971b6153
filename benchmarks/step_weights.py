"""What a decode token costs against a prefill token, for metered worker time (EngineConfig.meter_decode_weight).

    .venv/bin/python benchmarks/step_weights.py                     # the catalogue's fp32 CPU engine
    .venv/bin/python benchmarks/step_weights.py --sizes 16 64 --repeats 5

For each size B it times, with the engine's own step meter (the runner's execute: forward and sampling),
(a) prefill-only steps: one new request whose B-token prompt is computed in one step, and
(b) decode-only steps: B requests each computing one token over its context,
and prints ms per token of each and their ratio. A step mixing both is then shared fairly when a decode token
weighs `ratio` prefill tokens. Prompts are about 40 tokens, as chat questions are, so decode contexts are short.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from prometheus_client import CollectorRegistry

from workers.config import EngineConfig
from workers.engine.llm_engine import LLMEngine
from workers.sampling_params import SamplingParams

PROMPT = "Explain, in a few short sentences, how a bicycle stays upright while it moves forward on a road."


def step_ms(engine: LLMEngine) -> float:
    before = engine.meter.metered_ms
    engine.step()
    return engine.meter.metered_ms - before


def prefill_ms_per_token(engine: LLMEngine, size: int, rid: str) -> float:
    ids = (engine.tokenizer.encode(PROMPT) * 8)[:size]
    engine.add_request(rid, ids, params=SamplingParams(max_tokens=1, temperature=0))
    ms = step_ms(engine)  # the whole prompt in one step (size <= max_num_batched_tokens)
    while engine.has_unfinished_requests():
        engine.step()
    return ms / size


def decode_ms_per_token(engine: LLMEngine, size: int, rid: str, steps: int) -> float:
    for i in range(size):
        engine.add_request(f"{rid}-{i}", PROMPT, params=SamplingParams(max_tokens=steps + 2, temperature=0,
                                                                         ignore_eos=True))
    while any(s.num_computed_tokens < s.num_prompt_tokens
              for s in engine.scheduler.running + list(engine.scheduler.waiting)):
        engine.step()  # every prompt prefilled
    engine.step()  # the first decode step may still carry a prefill's last sample
    times = [step_ms(engine) / size for _ in range(steps)]
    engine.abort_all()
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--threads", type=int, default=1)  # 2 spin-waits badly on a shared 2-core box
    ap.add_argument("--sizes", type=int, nargs="+", default=[8, 32, 64])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    config = EngineConfig(device="cpu", dtype=args.dtype, num_threads=args.threads, max_num_seqs=max(args.sizes),
                          max_num_batched_tokens=max(1024, *args.sizes),
                          enable_prefix_caching=False)  # every repeat computes its prompt anew
    engine = LLMEngine(config, registry=CollectorRegistry())
    prefill_ms_per_token(engine, 16, "warm")  # first-call costs out of the way
    print(f"{'size':>5} {'prefill ms/token':>17} {'decode ms/token':>16} {'ratio':>6}")
    ratios = []
    for size in args.sizes:
        p = statistics.median(prefill_ms_per_token(engine, size, f"p{size}-{r}") for r in range(args.repeats))
        d = decode_ms_per_token(engine, size, f"d{size}", args.repeats)
        ratios.append(d / p)
        print(f"{size:>5} {p:>17.3f} {d:>16.3f} {d / p:>6.2f}")
    print(f"median ratio: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
