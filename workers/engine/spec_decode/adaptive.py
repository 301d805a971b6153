"""Who drafts this step, and how many tokens: plain data, no torch.

Drafting pays when verification is nearly free, i.e. when a step's cost is reading the weights, not
computing on many tokens. So a step drafts for nobody once the batch is large, and a sequence whose drafts
keep being rejected stops drafting for a while (its verification would only add work), then tries again:
what a text copies from its prompt comes and goes.

Requests that opt out, by SamplingParams.speculative = False or by what they ask for:
- a grammar (structured output): its matcher would have to follow tokens that may be rejected;
- repetition / presence / frequency penalties: each drafted position would need its own counts;
- min_tokens not yet reached: each position would need its own stop-token mask;
- stop strings with n > 1 and no logprobs: a stop string found inside a step's tokens drops the tokens after
  it (OutputProcessor), and their share of the cumulative logprob best_of ranks by is known only when kept.
logprobs, n > 1, stop strings and seeds otherwise draft as any request."""
from __future__ import annotations

from dataclasses import dataclass

from workers.engine.sequence import Sequence
from workers.speculative_config import SpeculativeConfig


@dataclass(slots=True)
class _Acceptance:
    ema: float  # moving average of the fraction of drafts accepted
    paused: int = 0  # the sequence's steps left without drafting


def can_draft(seq: Sequence) -> bool:
    """seq is decoding (one known token still to compute, after at least one sampled) and drafting does not
    change what it may sample."""
    p = seq.params
    return (p.speculative and seq.grammar is None and not p.has_penalties
            and not (p.stop and p.n > 1 and p.logprobs is None)
            and seq.num_output_tokens >= max(1, p.min_tokens)
            and seq.num_tokens - seq.num_computed_tokens == 1)


class AdaptiveDrafting:
    def __init__(self, config: SpeculativeConfig, max_seq_len: int) -> None:
        self.config = config
        self.max_seq_len = max_seq_len  # a sequence stops ("length") when it holds this many tokens
        self._acceptance: dict[tuple[str, int], _Acceptance] = {}
        self._batch_small = True

    def begin_step(self, running: list[Sequence]) -> None:
        """Once a step, before num_drafts: the batch-size gate, and state kept for running sequences only."""
        decoding = sum(1 for seq in running if seq.num_tokens - seq.num_computed_tokens == 1)
        self._batch_small = decoding <= self.config.max_batch_size
        keys = {seq.key for seq in running}
        if any(key not in keys for key in self._acceptance):
            self._acceptance = {k: v for k, v in self._acceptance.items() if k in keys}

    def num_drafts(self, seq: Sequence, budget: int) -> int:
        """How many tokens seq may draft this step (0: none), within the step's token budget, max_tokens and
        the sequence length limit: the step keeps up to k + 1 tokens, and never more than those limits allow."""
        if not self._batch_small or not can_draft(seq):
            return 0
        state = self._acceptance.get(seq.key)
        if state is None:
            state = self._acceptance[seq.key] = _Acceptance(self.config.acceptance_init)
        if state.paused:
            state.paused -= 1
            return 0
        left = min(seq.params.max_tokens - seq.num_output_tokens, self.max_seq_len - seq.num_tokens, budget)
        return max(0, min(self.config.num_tokens, left - 1))

    def observe(self, seq: Sequence, num_drafts: int, num_accepted: int) -> None:
        """After verification: update seq's acceptance average; pause it when the average is too low."""
        state = self._acceptance.get(seq.key)
        if state is None or num_drafts < 1:
            return
        w = self.config.ema_weight
        state.ema = (1 - w) * state.ema + w * num_accepted / num_drafts
        if state.ema < self.config.min_acceptance:
            state.paused = self.config.backoff_steps
            state.ema = self.config.acceptance_init  # the retry starts afresh
