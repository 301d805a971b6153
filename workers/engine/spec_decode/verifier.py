"""The runner's side of verification: target logits at every drafted position -> the tokens each row keeps.

Greedy rows take the argmax path (exactly what one-token steps would pick on these logits); sampled rows go
through rejection sampling on the same filtered distribution the sampler draws from (temperature, min-p,
top-k, top-p), with uniforms from the completion's own seeded generator. logprobs, when asked for, are the raw
model's at each kept position, as the sampler reports them.
"""
from __future__ import annotations

import torch

from workers.engine.sampler import Sampler, filtered_probs, token_logprobs
from workers.engine.scheduler_output import ScheduledSequence
from workers.engine.spec_decode.rejection import greedy_verify, rejection_sample
from workers.outputs import TokenLogprob


class Verifier:
    def __init__(self, sampler: Sampler) -> None:
        self.sampler = sampler  # its per-completion generators: a request's draws stay on its seeded stream

    def verify(self, logits: torch.Tensor, rows: list[ScheduledSequence], starts: list[int],
               draft_probs: list[torch.Tensor | None]) -> tuple[list[list[int]], list[list[TokenLogprob] | None]]:
        """logits [L, V] float32: row r's 1 + k_r positions start at starts[r]; draft_probs[r]: the proposer's
        q [k_r, V] for a sampled row (None: a deterministic proposer). Returns each row's kept tokens (its
        accepted drafts, then one token of the target's) and their logprobs (None where not asked for)."""
        ks = [s.num_draft_tokens for s in rows]
        width, vocab, device = max(ks), logits.shape[1], logits.device
        # [R, K + 1, V]: short rows repeat their last position (never read: past num_drafts).
        index = [start + min(j, k) for start, k in zip(starts, ks) for j in range(width + 1)]
        blocks = logits.index_select(0, torch.tensor(index, device=device)).view(len(rows), width + 1, vocab)
        drafts = torch.tensor([s.draft_token_ids + [0] * (width - s.num_draft_tokens) for s in rows], device=device)
        num_drafts = torch.tensor(ks, device=device)
        accepted = [0] * len(rows)
        final = [0] * len(rows)
        greedy = [r for r, s in enumerate(rows) if s.seq.params.greedy]
        sampled = [r for r, s in enumerate(rows) if not s.seq.params.greedy]
        for group, fn in ((greedy, self._greedy), (sampled, self._sample)):
            if group:
                got = fn(blocks, drafts, num_drafts, rows, group, draft_probs)
                for r, a, t in zip(group, *(x.tolist() for x in got)):
                    accepted[r], final[r] = a, t
        tokens = [[*s.draft_token_ids[:a], t] for s, a, t in zip(rows, accepted, final)]
        return tokens, self._logprobs(blocks, rows, tokens)

    @staticmethod
    def _greedy(blocks: torch.Tensor, drafts: torch.Tensor, num_drafts: torch.Tensor, rows: list[ScheduledSequence],
                group: list[int], draft_probs: list[torch.Tensor | None]) -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.tensor(group, device=blocks.device)
        return greedy_verify(blocks[index], drafts[index], num_drafts[index])

    def _sample(self, blocks: torch.Tensor, drafts: torch.Tensor, num_drafts: torch.Tensor,
                rows: list[ScheduledSequence], group: list[int],
                draft_probs: list[torch.Tensor | None]) -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.tensor(group, device=blocks.device)
        n, positions, vocab = len(group), blocks.shape[1], blocks.shape[2]
        params = [rows[r].seq.params for r in group]

        def column(values: list[float], dtype: torch.dtype) -> torch.Tensor:  # one value per position of each row
            return torch.tensor(values, dtype=dtype, device=blocks.device).repeat_interleave(positions)

        probs = filtered_probs(
            blocks[index].view(n * positions, vocab),
            column([p.temperature for p in params], blocks.dtype),
            column([max(p.top_k, 0) for p in params], torch.long),
            column([p.top_p for p in params], blocks.dtype),
            column([p.min_p for p in params], blocks.dtype) if any(p.min_p > 0 for p in params) else None,
        ).view(n, positions, vocab)
        q = None
        if any(draft_probs[r] is not None for r in group):
            q = torch.zeros((n, positions - 1, vocab), dtype=probs.dtype, device=probs.device)
            for j, r in enumerate(group):
                k, given = rows[r].num_draft_tokens, draft_probs[r]
                if given is None:  # deterministic: one-hot at the draft
                    q[j, :k].scatter_(1, drafts[r, :k].unsqueeze(1), 1.0)
                else:
                    q[j, :k] = given
        uniforms = torch.stack([torch.rand(positions, generator=self.sampler.generator(rows[r].seq),
                                           device=blocks.device) for r in group])
        return rejection_sample(probs, drafts[index], num_drafts[index], q, uniforms)

    @staticmethod
    def _logprobs(blocks: torch.Tensor, rows: list[ScheduledSequence],
                  tokens: list[list[int]]) -> list[list[TokenLogprob] | None]:
        out: list[list[TokenLogprob] | None] = [None] * len(rows)
        for r, (s, kept) in enumerate(zip(rows, tokens)):
            if s.seq.params.wants_logprob:
                raw = torch.log_softmax(blocks[r, :len(kept)], dim=1)  # the raw model's, before any filtering
                out[r] = token_logprobs(raw, kept, [s.seq.params.logprobs or 0] * len(kept))
        return out
