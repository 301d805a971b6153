"""Per-request sampling settings, validated at submission (vLLM's fields and ranges)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from workers.structured.spec import StructuredOutput

MAX_N = 16  # parallel completions per request; the engine also caps n at max_num_seqs
MAX_LOGPROBS = 20  # top alternatives per generated token, as OpenAI's top_logprobs


@dataclass(slots=True)
class SamplingParams:
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
    # unmet min_tokens do not draft anyway (workers/engine/spec_decode/adaptive.py).
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

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @property
    def has_penalties(self) -> bool:
        return self.repetition_penalty != 1 or self.presence_penalty != 0 or self.frequency_penalty != 0

    @property
    def wants_logprob(self) -> bool:
        """The sampler computes the sampled token's logprob: asked for, or to rank n completions
        (CompletionOutput.cumulative_logprob, which the gateway's best_of picks by)."""
        return self.logprobs is not None or self.n > 1


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and not (isinstance(x, float) and math.isnan(x))
