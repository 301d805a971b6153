"""The runner's unit of work: one sequence's tokens in a forward pass (the target's, or a draft model's)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class ComputeRow:
    """One sequence's tokens in a forward pass: token_ids[j] at position start + j, its KV written into the
    slot block_table maps that position to."""

    request_id: str
    token_ids: list[int]
    start: int
    block_table: list[int]
    num_logits: int = 0  # logits for the last num_logits tokens: 1 to sample, 1 + k to verify k drafts
