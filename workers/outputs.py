"""What the engine hands back per request: plain data."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class CompletionOutput:
    """One generated continuation.

    Cumulative outputs (LLM / LLMEngine by default) carry the whole text and token ids so far.
    Delta outputs (AsyncEngine) carry only what is new since the previous output of the same
    request; concatenating them gives the cumulative result. In both, `text` never shows a
    tail that could still turn into a stop string, nor half of a multi-byte character.
    """

    index: int
    text: str
    token_ids: list[int]
    finish_reason: str | None = None  # "stop" | "length" | "abort", on the final output only

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

    `outputs[0]` is cumulative or a delta (see CompletionOutput); `num_output_tokens` is always
    the cumulative count of generated tokens, so a stream consumer can report usage without
    summing deltas. `num_cached_tokens` are prompt tokens served from the prefix cache.
    """

    request_id: str
    prompt: str | None
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]
    finished: bool
    num_output_tokens: int
    num_cached_tokens: int = 0
    metrics: RequestMetrics | None = field(default=None)

    @property
    def num_prompt_tokens(self) -> int:
        return len(self.prompt_token_ids)

    def merge_delta(self, later: RequestOutput) -> RequestOutput:
        """Fold a later delta of the same request into this one (a slow consumer gets one output)."""
        if later.request_id != self.request_id:
            raise ValueError(f"request_id mismatch: {self.request_id!r} vs {later.request_id!r}")
        mine, theirs = self.outputs[0], later.outputs[0]
        completion = CompletionOutput(mine.index, mine.text + theirs.text, mine.token_ids + theirs.token_ids,
                                      theirs.finish_reason)
        return RequestOutput(self.request_id, self.prompt, self.prompt_token_ids, [completion], later.finished,
                             later.num_output_tokens, later.num_cached_tokens, later.metrics)

