"""What the engine hands back per request: plain data."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True, frozen=True)
class TokenLogprob:
    """One generated token's log-probability and its most likely alternatives.

    Log-probabilities are of the model's raw next-token distribution: log_softmax of its logits in
    float32, before penalties, temperature, min_tokens masking and top-k/top-p/min-p cuts (vLLM's
    default "raw" logprobs). So a value means the same whatever the request's sampling settings, and
    the cumulative sum ranks completions by how likely the model finds them. `top` holds
    SamplingParams.logprobs (token_id, logprob) pairs, most likely first; the sampled token may or may
    not be among them. Token text is the caller's to decode (Tokenizer.decode([token_id]))."""

    token_id: int
    logprob: float
    top: tuple[tuple[int, float], ...] = ()


@dataclass(slots=True)
class CompletionOutput:
    """One generated continuation: completion `index` (0..n-1) of its request.

    Cumulative outputs (LLM / LLMEngine by default) carry the whole text and token ids so far.
    Delta outputs (AsyncEngine) carry only what is new since the previous output of the same
    completion; concatenating them gives the cumulative result. In both, `text` never shows a
    tail that could still turn into a stop string, nor half of a multi-byte character.

    `logprobs` (when SamplingParams.logprobs is set) is aligned with `token_ids`: cumulative or delta
    alike. `cumulative_logprob` is always the running sum over every token so far (not a delta); it is
    set when logprobs were asked for or n > 1, else None.
    """

    index: int
    text: str
    token_ids: list[int]
    finish_reason: str | None = None  # "stop" | "length" | "abort", on the completion's final output only
    logprobs: list[TokenLogprob] | None = None
    cumulative_logprob: float | None = None

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass(slots=True)
class RequestMetrics:
    """time.monotonic() stamps of a request's life (None until reached)."""

    arrival_time: float
    first_scheduled_time: float | None = None
    first_token_time: float | None = None
    finished_time: float | None = None

    @property
    def time_to_first_token(self) -> float | None:
        return None if self.first_token_time is None else self.first_token_time - self.arrival_time

    @property
    def queue_time(self) -> float | None:
        return None if self.first_scheduled_time is None else self.first_scheduled_time - self.arrival_time


@dataclass(slots=True)
class RequestOutput:
    """One request's progress after a step.

    `outputs` are CompletionOutputs ordered by index. Cumulative outputs hold all n completions. A
    delta output holds one CompletionOutput per completion that gained tokens or finished since the
    request's previous output (with n == 1: always `outputs[0]`); a completion is absent from the
    deltas after the one that carried its finish_reason. `finished` is True once all n completions
    have finished, on the request's last output only.

    `num_output_tokens` is always the cumulative count of generated tokens, summed over the n
    completions (usage), so a stream consumer can report it without summing deltas. The prompt
    counts once however large n is. `num_cached_tokens` are prompt tokens served from the prefix cache.
    `engine_ms` is cumulative too: the request's metered share of the engine steps it was in, all n
    completions together (workers/engine/step_meter.py). `num_reserved_tokens` (cumulative) are the generated
    tokens the tenant's reserved throughput covered (workers/engine/reservations.py); the rest were best-effort.
    """

    request_id: str
    prompt: str | None
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]
    finished: bool
    num_output_tokens: int
    num_cached_tokens: int = 0
    metrics: RequestMetrics | None = field(default=None)
    engine_ms: float = 0.0
    num_reserved_tokens: int = 0

    @property
    def num_prompt_tokens(self) -> int:
        return len(self.prompt_token_ids)

    def merge_delta(self, later: RequestOutput) -> RequestOutput:
        """Fold a later delta of the same request into this one (a slow consumer gets one output)."""
        if later.request_id != self.request_id:
            raise ValueError(f"request_id mismatch: {self.request_id!r} vs {later.request_id!r}")
        merged = {c.index: c for c in self.outputs}
        for theirs in later.outputs:
            mine = merged.get(theirs.index)
            merged[theirs.index] = theirs if mine is None else _merge_completion(mine, theirs)
        return RequestOutput(self.request_id, self.prompt, self.prompt_token_ids,
                             [merged[i] for i in sorted(merged)], later.finished, later.num_output_tokens,
                             later.num_cached_tokens, later.metrics, later.engine_ms,
                             later.num_reserved_tokens)


def _merge_completion(mine: CompletionOutput, theirs: CompletionOutput) -> CompletionOutput:
    logprobs = None if mine.logprobs is None and theirs.logprobs is None else \
        (mine.logprobs or []) + (theirs.logprobs or [])
    return CompletionOutput(mine.index, mine.text + theirs.text, mine.token_ids + theirs.token_ids,
                            theirs.finish_reason, logprobs, theirs.cumulative_logprob)
