"""What the scheduler hands the model runner for one step."""
from __future__ import annotations

from dataclasses import dataclass, field

from workers.engine.sequence import Sequence


@dataclass(slots=True)
class ScheduledSequence:
    seq: Sequence
    # Compute tokens seq.token_ids[start : start + num_new_tokens], start = seq.num_computed_tokens.
    num_new_tokens: int

    @property
    def start(self) -> int:
        return self.seq.num_computed_tokens

    @property
    def samples(self) -> bool:
        """True when this chunk reaches the end of the known tokens: the runner samples a next token."""
        return self.start + self.num_new_tokens == self.seq.num_tokens


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
