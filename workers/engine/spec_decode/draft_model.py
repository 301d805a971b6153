"""Drafts from a small model: k forward passes of it, one token at a time, over the paged cache.

Execution, like the model runner it serves: the scheduler has reserved each drafting sequence's 1 + k slots
(its last known token x at position P, then the drafts at P + 1..P + k), and before the target's forward pass
this fills ScheduledSequence.draft_token_ids. Pass 1 runs x at P and gives d_1; pass j runs d_(j-1) at
P + j - 1 and gives d_j. The draft's KV goes into the same slots as the target's (the same block tables),
in KV tensors of its own, or, for a self-draft, in the target's own first layers.

A self-draft (the target's first layers, then its own norm and head) shares those layers' KV with the
target: a full forward pass writes exactly what the draft would, so the draft never computes a prompt and
its context is always complete. The target's verification pass overwrites the slots the draft wrote at
P..P + k - 1 before it reads them.

A separate draft model keeps its own KV and catches up lazily: when a sequence drafts, pass 1 first
computes whatever of its context the draft has not (the whole prompt, the first time). What the draft holds
for a sequence is a hint, never trusted for correctness: a wrong draft KV only lowers acceptance, since the
target verifies every token.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from workers.engine.compute_row import ComputeRow
from workers.engine.sampler import filtered_probs
from workers.engine.scheduler_output import ScheduledSequence
from workers.speculative_config import SpeculativeConfig

if TYPE_CHECKING:
    from workers.config import EngineConfig
    from workers.engine.model_runner import ModelRunner
    from workers.model.llama import LlamaEarlyExit, LlamaForCausalLM


class DraftModel:
    def __init__(self, model: torch.nn.Module, k_cache: torch.Tensor, v_cache: torch.Tensor, runner: ModelRunner,
                 *, shares_kv: bool) -> None:
        """model: forward(input_ids, positions, k_cache, v_cache, meta, logits_indices) -> float32 logits;
        caches [draft layers, KVH, runner.num_kv_blocks, block_size, D]."""
        self.model = model
        self.k_cache = k_cache
        self.v_cache = v_cache
        self.runner = runner  # builds the batches (block tables checked there) and owns the generators
        self.shares_kv = shares_kv
        # Separate KV only: per sequence, how many leading tokens have draft KV.
        self._computed: dict[tuple[str, int], int] = {}

    @classmethod
    def build(cls, spec: SpeculativeConfig, runner: ModelRunner, config: EngineConfig) -> DraftModel:
        """The draft SpeculativeConfig names, on the runner's device and kernel set."""
        target = runner.model
        if spec.model is None or spec.model == config.model:
            layers = target.config.num_layers
            if spec.num_layers is None or spec.num_layers >= layers:
                raise ValueError(f"speculative: a self-draft needs num_layers below the target's {layers}")
            n = spec.num_layers
            return cls(target.early_exit(n), runner.k_cache[:n], runner.v_cache[:n], runner, shares_kv=True)
        from workers.model.registry import load_model
        from workers.model.runtime import linear_weights, to_runtime

        loaded = load_model(spec.model, config.dtype,
                            gguf_weights=runner.kernels.reads_blocks and config.quantization is None)
        model = to_runtime(loaded.model, linear_weights(loaded.model, config.quantization, loaded.gguf_weights),
                           runner.kernels)
        cfg = model.config
        if cfg.vocab_size != target.config.vocab_size:
            raise ValueError(f"speculative: the draft's vocabulary ({cfg.vocab_size}) is not the target's "
                             f"({target.config.vocab_size})")
        if model.max_context_len < runner.max_model_len:
            raise ValueError(f"speculative: the draft's context ({model.max_context_len}) is shorter than "
                             f"max_model_len ({runner.max_model_len})")
        draft: LlamaForCausalLM | LlamaEarlyExit = model
        if spec.num_layers is not None:
            draft = model.early_exit(spec.num_layers)
        # [draft layers, KVH, blocks, block_size, head_dim]: the target's block ids address it too.
        shape = (spec.num_layers or cfg.num_layers, cfg.num_kv_heads, runner.num_kv_blocks, runner.block_size,
                 cfg.head_dim)
        k = torch.zeros(shape, dtype=draft.dtype, device=runner.device)
        return cls(draft, k, torch.zeros_like(k), runner, shares_kv=False)

    def release(self, request_id: str) -> None:
        for key in [k for k in self._computed if k[0] == request_id]:
            del self._computed[key]

    @torch.inference_mode()
    def propose(self, scheduled: list[ScheduledSequence]) -> dict[int, torch.Tensor]:
        """Fill draft_token_ids of every row with drafts; returns the draft's distributions q [k, V] that drew
        them, for sampled rows, by index in `scheduled` (greedy rows take the argmax: no q needed)."""
        self._forget_recomputed(scheduled)
        rows = [i for i, s in enumerate(scheduled) if s.num_draft_tokens and not s.draft_token_ids]
        if not rows:
            return {}
        drafts: dict[int, list[int]] = {i: [] for i in rows}
        probs: dict[int, list[torch.Tensor]] = {i: [] for i in rows}
        compute = [self._first_row(scheduled[i]) for i in rows]
        active = rows
        for j in range(max(scheduled[i].num_draft_tokens for i in rows)):
            if j:
                active = [i for i in active if scheduled[i].num_draft_tokens > j]
                compute = [ComputeRow(scheduled[i].seq.request_id, [drafts[i][-1]], scheduled[i].start + j,
                                      scheduled[i].seq.block_table, 1) for i in active]
            for i, token, q in zip(active, *self._next_tokens(compute, [scheduled[i] for i in active])):
                drafts[i].append(token)
                if q is not None:
                    probs[i].append(q)
        for i in rows:
            scheduled[i].draft_token_ids = drafts[i]
            if not self.shares_kv:
                self._computed[scheduled[i].seq.key] = scheduled[i].start + 1  # through x; drafts may be rejected
        return {i: torch.stack(probs[i]) for i in rows if probs[i]}

    def _first_row(self, s: ScheduledSequence) -> ComputeRow:
        """Pass 1 for s: its last known token, after whatever of its context the draft has no KV for."""
        seq, last = s.seq, s.start
        begin = last if self.shares_kv else min(self._computed.get(seq.key, 0), last)
        return ComputeRow(seq.request_id, seq.token_ids[begin:last + 1], begin, seq.block_table, 1)

    def _forget_recomputed(self, scheduled: list[ScheduledSequence]) -> None:
        # A sequence computing tokens the draft already had was preempted: its blocks, and so the draft's KV
        # in them, may be others now. Start its draft context afresh.
        for s in scheduled:
            if self._computed.get(s.seq.key, 0) > s.start:
                self._computed[s.seq.key] = 0

    def _next_tokens(self, compute: list[ComputeRow],
                     rows: list[ScheduledSequence]) -> tuple[list[int], list[torch.Tensor | None]]:
        """One draft forward pass; each row's next draft token, and for sampled rows the q it was drawn from."""
        batch = self.runner.prepare_rows(compute)
        logits = self.model(batch.input_ids, batch.positions, self.k_cache, self.v_cache, batch.meta,
                            batch.logits_indices)
        order = {i: at for at, i in enumerate(batch.sample_rows)}  # decode rows come first in the batch
        logits = logits.index_select(0, torch.tensor([order[i] for i in range(len(rows))], device=logits.device))
        tokens = logits.argmax(dim=1).tolist()
        qs: list[torch.Tensor | None] = [None] * len(rows)
        sampled = [r for r, s in enumerate(rows) if not s.seq.params.greedy]
        if sampled:
            params = [rows[r].seq.params for r in sampled]
            device, dtype = logits.device, logits.dtype
            probs = filtered_probs(
                logits[sampled],
                torch.tensor([p.temperature for p in params], dtype=dtype, device=device),
                torch.tensor([max(p.top_k, 0) for p in params], dtype=torch.long, device=device),
                torch.tensor([p.top_p for p in params], dtype=dtype, device=device),
                torch.tensor([p.min_p for p in params], dtype=dtype, device=device)
                if any(p.min_p > 0 for p in params) else None,
            )
            for j, r in enumerate(sampled):
                tokens[r] = int(torch.multinomial(probs[j], 1, generator=self.runner.sampler.generator(rows[r].seq)))
                qs[r] = probs[j]
        return tokens, qs
