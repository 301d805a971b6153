"""SamplingParams construction (the engine's per-request hot path) with its declarative validation
(workers/validation.py: a strict pydantic dataclass) against the hand-written checks it replaced, in the same run.

    .venv/bin/python benchmarks/sampling_params_construction.py [--number 50000]

Prints microseconds per construction, best of --repeats, for the defaults and for a request that sets eight fields, and
each ratio declarative/hand-written (the goal: within about 1.10)."""
from __future__ import annotations

import argparse
import math
import sys
import timeit
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workers.sampling_params import MAX_LOGPROBS, MAX_N, SamplingParams
from workers.structured.spec import StructuredOutput

# --- the hand-written validation as it was (the baseline), kept here only to measure against


@dataclass(slots=True)
class HandChecked:
    # n completions of one prompt: the prompt's KV is computed once and shared (see Scheduler._fork).
    n: int = 1
    max_tokens: int = 16
    # EOS and stop_token_ids cannot end the output before this many tokens, and stop strings are not
    # looked for before it.
    min_tokens: int = 0
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0  # 0 (or -1): no top-k cut
    min_p: float = 0.0  # drop tokens less likely than min_p x the most likely one (after temperature)
    # HF / vLLM: over prompt and output tokens, a positive logit is divided by it, a negative one multiplied.
    repetition_penalty: float = 1.0
    # OpenAI: over output tokens, logit -= presence_penalty * [count > 0] + frequency_penalty * count.
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    stop_token_ids: list[int] = field(default_factory=list)
    ignore_eos: bool = False
    include_stop_str_in_output: bool = False  # keep the matched stop string (or stop token's text) in the text
    skip_special_tokens: bool = True
    # None: no logprobs. k in 0..20: each generated token's logprob and its k most likely alternatives.
    logprobs: int | None = None
    # None, or what the output must match (a JSON schema, any JSON object, a regex, a grammar), enforced at decode
    # time; a dict {"kind", "value"} (the wire form) is taken too. The engine compiles it at submission.
    structured: StructuredOutput | None = None
    # False: never speculate for this request (EngineConfig.speculative). Requests with a grammar, penalties or
    # unmet min_tokens do not draft anyway (workers/spec_decode/adaptive.py).
    speculative: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        if isinstance(self.structured, dict):
            self.structured = StructuredOutput.from_wire(self.structured)
        if not _is_int(self.n) or not 1 <= self.n <= MAX_N:
            raise ValueError(f"n must be an integer in [1, {MAX_N}], got {self.n!r}")
        if not _is_int(self.max_tokens) or self.max_tokens < 1:
            raise ValueError(f"max_tokens must be an integer >= 1, got {self.max_tokens!r}")
        if not _is_int(self.min_tokens) or not 0 <= self.min_tokens <= self.max_tokens:
            raise ValueError(f"min_tokens must be an integer in [0, max_tokens={self.max_tokens}], "
                             f"got {self.min_tokens!r}")
        if not _is_number(self.temperature) or self.temperature < 0:
            raise ValueError(f"temperature must be a number >= 0, got {self.temperature!r}")
        if not _is_number(self.top_p) or not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if not _is_int(self.top_k) or self.top_k < -1:
            raise ValueError(f"top_k must be -1, 0 or positive, got {self.top_k!r}")
        if not _is_number(self.min_p) or not 0 <= self.min_p <= 1:
            raise ValueError(f"min_p must be in [0, 1], got {self.min_p!r}")
        if not _is_number(self.repetition_penalty) or not 0 < self.repetition_penalty < float("inf"):
            raise ValueError(f"repetition_penalty must be a finite number > 0, got {self.repetition_penalty!r}")
        for name in ("presence_penalty", "frequency_penalty"):
            value = getattr(self, name)
            if not _is_number(value) or not -2 <= value <= 2:
                raise ValueError(f"{name} must be in [-2, 2], got {value!r}")
        if self.seed is not None and not _is_int(self.seed):
            raise ValueError(f"seed must be an integer or None, got {self.seed!r}")
        if not isinstance(self.stop, list) or any(not isinstance(s, str) or not s for s in self.stop):
            raise ValueError("stop must be a list of non-empty strings")
        if not isinstance(self.stop_token_ids, list) or not all(_is_int(t) and t >= 0 for t in self.stop_token_ids):
            raise ValueError("stop_token_ids must be a list of non-negative integers")
        for name in ("ignore_eos", "include_stop_str_in_output", "skip_special_tokens", "speculative"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a boolean, got {getattr(self, name)!r}")
        if self.logprobs is not None and (not _is_int(self.logprobs) or not 0 <= self.logprobs <= MAX_LOGPROBS):
            raise ValueError(f"logprobs must be None or an integer in [0, {MAX_LOGPROBS}], got {self.logprobs!r}")
        if self.structured is not None and not isinstance(self.structured, StructuredOutput):
            raise ValueError(f"structured must be None, a StructuredOutput or a {{'kind', 'value'}} dict, "
                             f"got {type(self.structured).__name__}")
        if self.structured is not None and self.min_tokens:
            # The grammar alone decides where the output may end (EOS once the value is complete).
            raise ValueError("min_tokens cannot be combined with structured output")


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and not math.isnan(x)


CASES = {"defaults": {}, "8 fields set": dict(n=2, max_tokens=64, temperature=0.7, top_p=0.9, top_k=40, stop=["x"],
                                              seed=3, logprobs=2)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--number", type=int, default=2000, help="constructions per timing")
    p.add_argument("--repeats", type=int, default=100, help="timings; the best counts (short timings, many of "
                   "them: the best is one the machine's other work did not interrupt)")
    args = p.parse_args()
    number, repeats = args.number, args.repeats
    for name, kw in CASES.items():
        # Interleaved, so a busy spell of the machine slows both alike.
        before = after = float("inf")
        for _ in range(repeats):
            before = min(before, timeit.timeit(lambda kw=kw: HandChecked(**kw), number=number) / number * 1e6)
            after = min(after, timeit.timeit(lambda kw=kw: SamplingParams(**kw), number=number) / number * 1e6)
        print(f"SamplingParams({name}): hand-written {before:.2f} us, declarative {after:.2f} us, "
              f"ratio {after / before:.2f}")


if __name__ == "__main__":
    main()
