"""A request's token state: plain data, no torch, no I/O."""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from workers.outputs import TokenLogprob
from workers.sampling_params import SamplingParams
from workers.schedule_params import ScheduleParams

if TYPE_CHECKING:
    from workers.structured.compiler import CompiledGrammar


class SequenceStatus(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(slots=True)
class Sequence:
    """One completion of a request. There is no prefill or decode phase: the KV of the first
    `num_computed_tokens` of `token_ids` is in the cache; the rest is still to compute.

    A request with n > 1 starts as one sequence (index 0, the parent); at its first sample it forks
    children 1..n-1 that share its prompt blocks (Scheduler._fork). Each then lives on its own."""

    request_id: str
    token_ids: list[int]
    num_prompt_tokens: int
    params: SamplingParams
    block_size: int
    arrival_time: float = field(default_factory=time.monotonic)
    status: SequenceStatus = SequenceStatus.WAITING
    num_computed_tokens: int = 0
    num_cached_tokens: int = 0  # prompt tokens served from the prefix cache (first schedule)
    # Prefix-cache isolation: blocks past the first `num_public_tokens` are hashed under this salt,
    # so only requests with the same salt (the same tenant) reuse them. None: shared with all.
    cache_salt: str | None = None
    num_public_tokens: int = 0  # a leading operator-declared public prefix, shared across salts
    block_table: list[int] = field(default_factory=list)
    finish_reason: str | None = None  # "stop" | "length" | "abort"
    first_scheduled_time: float | None = None
    first_token_time: float | None = None
    finished_time: float | None = None
    index: int = 0  # which of the request's n completions this sequence generates
    cumulative_logprob: float = 0.0  # sum of the sampled tokens' logprobs, when the runner computes them
    output_logprobs: list[TokenLogprob] = field(default_factory=list)  # one per output token, when asked for
    # params.structured compiled at submission (immutable, shared by the request's completions); None: free text.
    grammar: CompiledGrammar | None = None
    schedule: ScheduleParams = field(default_factory=ScheduleParams)  # priority and fair-share tenant
    # Generated tokens the tenant's reserved throughput covered (workers/engine/reservations.py); the rest of
    # num_output_tokens were best-effort.
    num_reserved_tokens: int = 0

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def num_output_tokens(self) -> int:
        return len(self.token_ids) - self.num_prompt_tokens

    @property
    def output_token_ids(self) -> list[int]:
        return self.token_ids[self.num_prompt_tokens:]

    @property
    def key(self) -> tuple[str, int]:
        """Identifies the sequence among all others (request ids identify requests)."""
        return self.request_id, self.index

    @property
    def awaiting_fork(self) -> bool:
        """The parent of an n > 1 request before its first token: that sample forks the children."""
        return self.index == 0 and self.params.n > 1 and self.num_tokens == self.num_prompt_tokens

    @property
    def num_blocks(self) -> int:
        return (self.num_tokens + self.block_size - 1) // self.block_size

    @property
    def is_finished(self) -> bool:
        return self.status is SequenceStatus.FINISHED

    @property
    def salt_block(self) -> int | None:
        """Index of the first block hashed under the salt: the first not wholly public."""
        return None if self.cache_salt is None else self.num_public_tokens // self.block_size

    def block_tokens(self, i: int) -> list[int]:
        return self.token_ids[i * self.block_size:(i + 1) * self.block_size]

    def fork(self, index: int) -> Sequence:
        """Completion `index` of this request, with the same tokens and progress so far. Its block
        table starts empty: BlockManager.fork shares the parent's blocks into it."""
        return Sequence(self.request_id, list(self.token_ids), self.num_prompt_tokens, self.params, self.block_size,
                        arrival_time=self.arrival_time, status=self.status,
                        num_computed_tokens=self.num_computed_tokens, num_cached_tokens=self.num_cached_tokens,
                        cache_salt=self.cache_salt, num_public_tokens=self.num_public_tokens,
                        first_scheduled_time=self.first_scheduled_time, index=index,
                        cumulative_logprob=self.cumulative_logprob, output_logprobs=list(self.output_logprobs),
                        grammar=self.grammar, schedule=self.schedule)
