"""Token bitmasks (llguidance's layout) applied to rows of logits, on the logits' device."""
from __future__ import annotations

import torch


def unpack(bitmask: torch.Tensor) -> torch.Tensor:
    """bitmask [R, W] int32 -> allowed [R, 32 W] bool: token t is allowed when bit t % 32 of word t // 32 is set."""
    shifts = torch.arange(32, dtype=torch.int32, device=bitmask.device)
    # An arithmetic shift of a negative word copies its sign bit, which `& 1` then drops.
    return ((bitmask.unsqueeze(2) >> shifts) & 1).bool().flatten(1)


def apply_token_bitmask(logits: torch.Tensor, rows: torch.Tensor, bitmask: torch.Tensor) -> None:
    """In place: logits [N, V] rows `rows` ([R] long, on logits' device) keep the tokens bitmask [R, W] allows
    and get -inf elsewhere. The bitmask covers the tokenizer's vocabulary; a model head wider than it has its
    extra columns disallowed, a narrower one ignores the extra bits."""
    allowed = unpack(bitmask.to(logits.device, non_blocking=True))
    vocab = logits.shape[1]
    if allowed.shape[1] < vocab:
        allowed = torch.nn.functional.pad(allowed, (0, vocab - allowed.shape[1]), value=False)
    sub = logits.index_select(0, rows).masked_fill_(~allowed[:, :vocab], float("-inf"))  # [R, V]
    logits.index_copy_(0, rows, sub)
