"""The scheduler's side of speculative decoding: reserve a decoding sequence's draft slots, and after the
step keep what the target accepted and roll the rest back. Plain data, no torch.

A sequence with k drafts is scheduled like a short prefill chunk: its last known token and the k drafts,
1 + k tokens whose KV is written in one forward pass. After verification the sequence keeps KV for the
tokens it kept; num_computed_tokens moves back over the rejected drafts, and blocks allocated only for them
go back to the pool (BlockManager.trim). Prefix-cache hashing (BlockManager.cache_blocks) sees computed,
kept tokens only, so a rejected draft never reaches the cache.
"""
from __future__ import annotations

from collections.abc import Callable

from workers.engine.block_manager import BlockManager
from workers.engine.scheduler_output import ScheduledSequence
from workers.engine.sequence import Sequence
from workers.engine.spec_decode.adaptive import AdaptiveDrafting
from workers.engine.spec_decode.ngram import NgramProposer
from workers.speculative_config import SpeculativeConfig

# Proposers that run here, on token ids. The other methods propose in the model runner (they need the KV
# cache): the scheduler only reserves their slots.
HOST_PROPOSERS: dict[str, Callable[[SpeculativeConfig], NgramProposer]] = {
    "ngram": lambda c: NgramProposer(c.lookup_min, c.lookup_max),
}


class DraftPlanner:
    def __init__(self, config: SpeculativeConfig, block_manager: BlockManager, *, max_seq_len: int) -> None:
        self.block_manager = block_manager
        self.adaptive = AdaptiveDrafting(config, max_seq_len)
        make = HOST_PROPOSERS.get(config.method)
        self.proposer = make(config) if make is not None else None
        self._reserve = 0

    def begin_step(self, running: list[Sequence]) -> None:
        self.adaptive.begin_step(running)
        # Blocks the batch may need for one token each: drafts never take them (no one is preempted for drafts).
        self._reserve = len(running)

    def schedule(self, seq: Sequence, budget: int) -> ScheduledSequence | None:
        """seq with its drafts and their slots allocated, or None: schedule it without drafts."""
        k = self.adaptive.num_drafts(seq, budget)
        if k < 1:
            return None
        drafts = self.proposer.propose(seq.token_ids, k) if self.proposer is not None else None
        num = k if drafts is None else len(drafts)
        if num < 1 or not self.block_manager.can_allocate_slots(seq, 1 + num, reserve=self._reserve):
            return None
        self.block_manager.allocate_slots(seq, 1 + num)
        return ScheduledSequence(seq, 1 + num, num_draft_tokens=num, draft_token_ids=drafts or [])

    def roll_back(self, s: ScheduledSequence, num_kept: int, num_accepted: int) -> None:
        """After s's verification kept num_kept tokens (already appended; num_accepted of them drafts): KV
        stays for the last known token and the kept drafts, the rejected drafts' slots are given back."""
        seq = s.seq
        s.num_accepted_drafts = num_accepted
        seq.num_computed_tokens = s.start + num_kept
        self.block_manager.trim(seq)
        self.adaptive.observe(seq, s.num_draft_tokens, num_accepted)
