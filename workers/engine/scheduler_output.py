"""What the scheduler hands the model runner for one step."""
from __future__ import annotations

from dataclasses import dataclass, field

from workers.engine.sequence import Sequence


@dataclass(slots=True)
class ScheduledSequence:
    """The scheduler's decision for one sequence this step. `start` and `samples` are frozen
    when the decision is made, so they stay true after the step has advanced the sequence."""

    seq: Sequence
    # Compute tokens seq.token_ids[start : start + num_new_tokens], start = seq.num_computed_tokens.
    num_new_tokens: int
    start: int = field(init=False)
    # True when this chunk reaches the end of the known tokens: the runner samples a next token.
    samples: bool = field(init=False)

    def __post_init__(self) -> None:
        if self.num_new_tokens < 1:
            raise ValueError(f"num_new_tokens must be >= 1, got {self.num_new_tokens}")
        self.start = self.seq.num_computed_tokens
        self.samples = self.start + self.num_new_tokens == self.seq.num_tokens


@dataclass(slots=True)
class SchedulerOutput:
    scheduled: list[ScheduledSequence] = field(default_factory=list)
    preempted: list[Sequence] = field(default_factory=list)

    @property
    def num_batched_tokens(self) -> int:
        return sum(s.num_new_tokens for s in self.scheduled)

    @property
    def is_empty(self) -> bool:
        return not self.scheduled
