"""Verifying k draft tokens against the target's distributions at the k + 1 positions one forward computed.

Row r drafted d_1..d_k (k = num_drafts[r], padded to K); the target's distribution p_0 (after the last known
token) and p_i (after d_i) are computed together. The step keeps the longest accepted run d_1..d_j and one
token of the target's own, so every step gains at least one token.

Greedy: d_i is accepted while it is p_{i-1}'s argmax; the extra token is the argmax at the first mismatch (or
after d_k). The output is exactly what one-token-a-step greedy decoding gives on the same logits.

Sampling (Leviathan et al. 2023; Chen et al. 2023): d_i was drawn from the proposer's q_{i-1}. Accept it with
probability min(1, p(d_i) / q(d_i)): where q >= p it is accepted with probability p/q, where q <= p always.
At the first rejection draw from the residual max(0, p - q), renormalised; after k acceptances draw from p_k.
Each kept token is then distributed exactly as p. A proposer without a model (n-gram) is deterministic: q is
one-hot at d, so d is accepted with probability p(d) and the residual is p with d removed, renormalised.

Randomness comes in as uniforms so that these functions are pure: [R, K + 1], the first K for the acceptance
tests, the last for the final draw (by inverse CDF).
"""
from __future__ import annotations

import torch


def greedy_verify(logits: torch.Tensor, drafts: torch.Tensor, num_drafts: torch.Tensor
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """logits [R, K + 1, V]; drafts [R, K] long; num_drafts [R] long -> (accepted drafts [R], final token [R])."""
    best = logits.argmax(dim=2)  # [R, K + 1]
    accepted = _leading_run(drafts == best[:, :-1], num_drafts)
    return accepted, best.gather(1, accepted.unsqueeze(1)).squeeze(1)


def rejection_sample(target_probs: torch.Tensor, drafts: torch.Tensor, num_drafts: torch.Tensor,
                     draft_probs: torch.Tensor | None, uniforms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """target_probs [R, K + 1, V] (each row sums to 1); drafts [R, K] long; num_drafts [R] long; draft_probs
    [R, K, V] (the proposer's q at each draft, which drew the draft), or None for a deterministic proposer;
    uniforms [R, K + 1] in [0, 1) -> (accepted drafts [R], final token [R])."""
    rows, width = drafts.shape
    if draft_probs is None:  # q one-hot at the draft
        draft_probs = torch.zeros_like(target_probs[:, :width]).scatter_(2, drafts.unsqueeze(2), 1.0)
    p_draft = target_probs[:, :width].gather(2, drafts.unsqueeze(2)).squeeze(2)  # [R, K]
    q_draft = draft_probs.gather(2, drafts.unsqueeze(2)).squeeze(2)
    # u < p/q, written without dividing: q <= p accepts for every u < 1; p = 0 never accepts.
    accepted = _leading_run(uniforms[:, :width] * q_draft < p_draft, num_drafts)
    index = torch.arange(rows, device=drafts.device)
    p_last = target_probs[index, accepted]  # [R, V]: the target's distribution where the run stopped
    rejected = accepted < num_drafts
    q_last = draft_probs[index, accepted.clamp(max=max(width - 1, 0))] if width else torch.zeros_like(p_last)
    residual = (p_last - q_last).clamp_min(0)
    dist = torch.where(rejected.unsqueeze(1), residual, p_last)
    # A rejection leaves residual mass unless p == q exactly (then rejection had probability 0): fall back to p.
    dist = torch.where(dist.sum(dim=1, keepdim=True) > 0, dist, p_last)
    return accepted, inverse_cdf(dist, uniforms[:, width])


def inverse_cdf(weights: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """One token per row of weights [R, V] (non-negative, not necessarily normalised), by u [R] in [0, 1)."""
    cdf = weights.cumsum(dim=1)
    target = uniforms.to(cdf.dtype).unsqueeze(1) * cdf[:, -1:]
    # The first token whose cumulative mass exceeds u * total: zero-weight tokens are never picked. Rounding
    # can push u * total up to the total itself: the last token with weight is the cap.
    picked = torch.searchsorted(cdf, target, right=True).squeeze(1)
    ids = torch.arange(weights.shape[1], device=weights.device)
    last = torch.where(weights > 0, ids, torch.zeros_like(ids)).amax(dim=1)
    return torch.minimum(picked, last)


def _leading_run(ok: torch.Tensor, num_drafts: torch.Tensor) -> torch.Tensor:
    """ok [R, K] bool -> [R] long: how many leading entries are True, counting only the first num_drafts."""
    width = ok.shape[1]
    valid = torch.arange(width, device=ok.device).unsqueeze(0) < num_drafts.unsqueeze(1)
    return (ok & valid).long().cumprod(dim=1).sum(dim=1)
