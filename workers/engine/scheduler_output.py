"""What the scheduler hands the model runner for one step, and what the runner hands back."""
from __future__ import annotations

from dataclasses import dataclass, field

from workers.engine.sequence import Sequence
from workers.outputs import TokenLogprob


@dataclass(slots=True)
class ScheduledSequence:
    """The scheduler's decision for one sequence this step. `start`, `samples` and `num_samples` are
    frozen when the decision is made, so they stay true after the step has advanced the sequence."""

    seq: Sequence
    # Compute tokens seq.token_ids[start : start + num_new_tokens], start = seq.num_computed_tokens; with
    # drafts, the last num_draft_tokens of them are the drafts instead (past seq.token_ids).
    num_new_tokens: int
    # Speculative decoding (workers/engine/spec_decode): a decoding sequence's proposed next tokens, verified in this
    # step's forward pass with logits at all 1 + num_draft_tokens positions. draft_token_ids is set by the
    # scheduler (n-gram) or, before the forward pass, by the runner's draft model.
    num_draft_tokens: int = 0
    draft_token_ids: list[int] = field(default_factory=list)
    start: int = field(init=False)
    # True when this chunk reaches the end of the known tokens: the runner samples a next token.
    samples: bool = field(init=False)
    # Tokens drawn from this row's logits: 0 without `samples`; n for the first sample of an n > 1
    # request's parent (token j opens completion j: the scheduler forks the children); else 1. A row with
    # drafts gets back the accepted drafts and one more token: 1 to 1 + num_draft_tokens in all.
    num_samples: int = field(init=False)
    num_accepted_drafts: int = field(init=False, default=0)  # set by Scheduler.update

    def __post_init__(self) -> None:
        if self.num_new_tokens < 1:
            raise ValueError(f"num_new_tokens must be >= 1, got {self.num_new_tokens}")
        self.start = self.seq.num_computed_tokens
        self.samples = self.start + self.num_new_tokens - self.num_draft_tokens == self.seq.num_tokens
        self.num_samples = (self.seq.params.n if self.seq.awaiting_fork else 1) if self.samples else 0
        if self.num_draft_tokens and (not 0 < self.num_draft_tokens < self.num_new_tokens
                                      or not self.samples or self.num_samples != 1):
            raise ValueError(f"{self.seq.request_id}: {self.num_draft_tokens} drafts need a decoding row "
                             f"of one known token, got {self.num_new_tokens} new tokens")

    @property
    def input_ids(self) -> list[int]:
        """The token ids this row computes: known tokens, then the drafts."""
        known = self.seq.token_ids[self.start:self.start + self.num_new_tokens - self.num_draft_tokens]
        if len(self.draft_token_ids) != self.num_draft_tokens:
            raise ValueError(f"{self.seq.request_id}: {len(self.draft_token_ids)} draft tokens for "
                             f"{self.num_draft_tokens} slots")
        return known + self.draft_token_ids


@dataclass(slots=True)
class SchedulerOutput:
    scheduled: list[ScheduledSequence] = field(default_factory=list)
    preempted: list[Sequence] = field(default_factory=list)
    # Copy-on-write: (src, dst) KV blocks the runner copies, all layers' K and V, before the forward pass.
    blocks_to_copy: list[tuple[int, int]] = field(default_factory=list)
    # Set by Scheduler.update: the children forked this step (their first token already appended).
    forked: list[Sequence] = field(default_factory=list)

    @property
    def num_batched_tokens(self) -> int:
        return sum(s.num_new_tokens for s in self.scheduled)

    @property
    def is_empty(self) -> bool:
        return not self.scheduled


@dataclass(slots=True)
class ModelRunnerOutput:
    """One step's samples, aligned with SchedulerOutput.scheduled: `sampled[i]` holds the
    `num_samples` tokens row i drew ([] where it did not sample); for a row with drafts, the drafts the
    target accepted and then one token of its own."""

    sampled: list[list[int]]
    # Aligned with `sampled`: each token's logprob where its request wants one (SamplingParams.wants_logprob),
    # else None; the whole field is None when no row of the step wanted any.
    logprobs: list[list[TokenLogprob | None]] | None = None
