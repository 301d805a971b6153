"""Per-request sampling settings, validated at construction (vLLM's fields and ranges): each field's type and
range is declared on it (workers/validation.py); only the shorthands and the rules between fields are code."""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, ValidationError

from workers.structured.spec import StructuredOutput
from workers.validation import Checked, one_line

MAX_N = 16  # parallel completions per request; the engine also caps n at max_num_seqs
MAX_LOGPROBS = 20  # top alternatives per generated token, as OpenAI's top_logprobs

Finite = Field(allow_inf_nan=False)
Penalty = Annotated[float, Field(ge=-2, le=2)]
NonEmpty = Annotated[str, Field(min_length=1)]


class SamplingParams(Checked):
    # n completions of one prompt: the prompt's KV is computed once and shared (see Scheduler._fork).
    n: Annotated[int, Field(ge=1, le=MAX_N)] = 1
    max_tokens: Annotated[int, Field(ge=1)] = 16
    # EOS and stop_token_ids cannot end the output before this many tokens, and stop strings are not
    # looked for before it.
    min_tokens: Annotated[int, Field(ge=0)] = 0
    temperature: Annotated[float, Field(ge=0), Finite] = 1.0
    top_p: Annotated[float, Field(gt=0, le=1)] = 1.0
    top_k: Annotated[int, Field(ge=-1)] = 0  # 0 (or -1): no top-k cut
    min_p: Annotated[float, Field(ge=0, le=1)] = 0.0  # drop tokens less likely than min_p x the most likely one
    # HF / vLLM: over prompt and output tokens, a positive logit is divided by it, a negative one multiplied.
    repetition_penalty: Annotated[float, Field(gt=0), Finite] = 1.0
    # OpenAI: over output tokens, logit -= presence_penalty * [count > 0] + frequency_penalty * count.
    presence_penalty: Penalty = 0.0
    frequency_penalty: Penalty = 0.0
    seed: int | None = None
    stop: list[NonEmpty] = Field(default_factory=list)  # a str is taken as [str]
    stop_token_ids: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list)
    ignore_eos: bool = False
    include_stop_str_in_output: bool = False  # keep the matched stop string (or stop token's text) in the text
    skip_special_tokens: bool = True
    # None: no logprobs. k in 0..20: each generated token's logprob and its k most likely alternatives.
    logprobs: Annotated[int, Field(ge=0, le=MAX_LOGPROBS)] | None = None
    # None, or what the output must match (a JSON schema, any JSON object, a regex, a grammar), enforced at decode
    # time; a dict {"kind", "value"} (the wire form) is taken too. The engine compiles it at submission.
    structured: StructuredOutput | None = None
    # False: never speculate for this request (EngineConfig.speculative). Requests with a grammar, penalties or
    # unmet min_tokens do not draft anyway (workers/engine/spec_decode/adaptive.py).
    speculative: bool = True

    def __init__(self, **data: Any) -> None:
        # Written out rather than as pydantic validator callbacks, each of which costs as much as ten declared
        # field checks on this per-request path: the shorthand forms before validation, the rules between
        # fields after it.
        if isinstance(stop := data.get("stop"), str):
            data["stop"] = [stop]
        if isinstance(structured := data.get("structured"), dict):
            data["structured"] = StructuredOutput.from_wire(structured)  # ValueError naming structured
        try:
            self.__pydantic_validator__.validate_python(data, self_instance=self)
        except ValidationError as e:
            raise ValueError(one_line(e)) from e
        if self.min_tokens > self.max_tokens:
            raise ValueError(f"min_tokens must be at most max_tokens={self.max_tokens}, got {self.min_tokens}")
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

