"""Execution: the only place that turns scheduled sequences into tensors and runs the forward pass."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from workers.config import EngineConfig
from workers.engine.compute_row import ComputeRow
from workers.engine.kv_budget import kv_cache_bytes
from workers.engine.sampler import Sampler
from workers.engine.scheduler_output import ModelRunnerOutput, ScheduledSequence, SchedulerOutput
from workers.engine.spec_decode.verifier import Verifier
from workers.model.attention import AttentionMetadata, PrefillChunk
from workers.model.kernel_sets.registry import select
from workers.model.registry import load_model
from workers.model.runtime import linear_weights, to_runtime
from workers.outputs import TokenLogprob
from workers.speculative_config import SpeculativeConfig

if TYPE_CHECKING:
    from workers.engine.cuda_graphs import DecodeGraphs
    from workers.engine.spec_decode.draft_model import DraftModel


@dataclass(slots=True)
class StepBatch:
    """One step's flat batch: decode tokens first, then prefill chunks, all sequences concatenated."""

    input_ids: torch.Tensor       # [T] long
    positions: torch.Tensor       # [T] long
    meta: AttentionMetadata
    logits_indices: torch.Tensor  # [L] long: flat index of every token whose logits the step needs, row by row
    sample_rows: list[int]        # the rows with logits (their index in SchedulerOutput.scheduled), logits order
    num_logits: list[int]         # aligned with sample_rows: consecutive logits rows each has (1 + its drafts)


class ModelRunner:
    def __init__(self, config: EngineConfig) -> None:
        if config.num_threads is not None:
            torch.set_num_threads(config.num_threads)
        assert config.device is not None  # resolved by EngineConfig.__post_init__
        self.device = torch.device(config.device)
        # Chosen once: every layer calls this set's ops; nothing tests the device per call.
        self.kernels = select(config.kernels, self.device, config.dtype, blocked_weights=config.block_quant_matmul,
                              decoder_stack=config.decoder_stack, int8_activations=config.int8_activations)
        loaded = load_model(config.model, config.dtype,
                            gguf_weights=self.kernels.reads_blocks and config.quantization is None)
        weights = linear_weights(loaded.model, config.quantization, loaded.gguf_weights)
        self.model = to_runtime(loaded.model, weights, self.kernels)
        self.tokenizer = loaded.tokenizer
        self.block_size = config.block_size
        context = self.model.max_context_len
        if config.max_model_len is not None and config.max_model_len > context:
            raise ValueError(f"max_model_len {config.max_model_len} exceeds the model's context length {context}")
        self.max_model_len = config.max_model_len or context
        cfg = self.model.config
        dtype = self.model.dtype
        # K and V, every layer, one block.
        self.kv_bytes_per_block = (2 * cfg.num_layers * self.block_size * cfg.num_kv_heads * cfg.head_dim
                                   * dtype.itemsize)
        self.num_kv_blocks = config.num_kv_blocks or kv_cache_bytes(config, self.device, cfg) // self.kv_bytes_per_block
        if self.num_kv_blocks < 1:
            raise ValueError(f"the KV cache budget holds no block ({self.kv_bytes_per_block} bytes each)")
        shape = (cfg.num_layers, cfg.num_kv_heads, self.num_kv_blocks, self.block_size, cfg.head_dim)
        # [layers, kv_heads, blocks, block_size, head_dim]
        self.k_cache = torch.zeros(shape, dtype=dtype, device=self.device)
        self.v_cache = torch.zeros(shape, dtype=dtype, device=self.device)
        self.sampler = Sampler(config.seed, self.device, eos_token_ids=self.tokenizer.eos_token_ids)
        self.verifier = Verifier(self.sampler)
        # Speculative decoding with a draft model: it proposes here, before the forward pass that verifies
        # (n-gram drafts come with the schedule). None: no model drafts.
        self.drafter: DraftModel | None = None
        if isinstance(config.speculative, SpeculativeConfig) and config.speculative.method == "draft":
            from workers.engine.spec_decode.draft_model import DraftModel

            self.drafter = DraftModel.build(config.speculative, self, config)
        self.graphs: DecodeGraphs | None = None
        if self.device.type == "cuda" and config.cuda_graphs and self.kernels.supports_cuda_graphs:
            from workers.engine.cuda_graphs import DecodeGraphs  # the only CUDA-specific code, behind one switch

            self.graphs = DecodeGraphs(self, max_batch=config.max_num_seqs)

    def release(self, request_id: str) -> None:
        self.sampler.release(request_id)
        if self.drafter is not None:
            self.drafter.release(request_id)

    @torch.inference_mode()
    def execute(self, out: SchedulerOutput) -> ModelRunnerOutput:
        if out.blocks_to_copy:
            self.copy_blocks(out.blocks_to_copy)  # before any KV is written: the copies' owners read them
        if out.is_empty:
            return ModelRunnerOutput([])
        # After the copies: a draft writes KV (a self-draft into the target's own cache) in the step's slots.
        draft_probs = self.drafter.propose(out.scheduled) if self.drafter is not None else {}
        batch, logits = self.forward(out.scheduled)
        return self.sample(out.scheduled, batch, logits, draft_probs)

    @torch.inference_mode()
    def copy_blocks(self, pairs: list[tuple[int, int]]) -> None:
        """Copy-on-write: block dst gets block src's K and V, every layer at once. All sources are read
        before any destination is written."""
        for src, dst in pairs:
            if not (0 <= src < self.num_kv_blocks and 0 <= dst < self.num_kv_blocks):
                raise ValueError(f"block copy {src} -> {dst} out of range [0, {self.num_kv_blocks})")
        sources = self._tensor([p[0] for p in pairs])
        targets = self._tensor([p[1] for p in pairs])
        for cache in (self.k_cache, self.v_cache):  # [layers, kv_heads, blocks, block_size, head_dim]
            cache.index_copy_(2, targets, cache.index_select(2, sources))

    @torch.inference_mode()
    def forward(self, scheduled: list[ScheduledSequence]) -> tuple[StepBatch, torch.Tensor]:
        """Write the scheduled tokens' KV into the cache; float32 logits [num_sampling, vocab] in
        batch.sample_rows order."""
        batch = self.prepare(scheduled)
        logits = self.graphs.run(batch) if self.graphs is not None else None
        if logits is None:
            logits = self.model(batch.input_ids, batch.positions, self.k_cache, self.v_cache, batch.meta,
                                batch.logits_indices)
        return batch, logits

    def sample(self, scheduled: list[ScheduledSequence], batch: StepBatch, logits: torch.Tensor,
               draft_probs: dict[int, torch.Tensor] | None = None) -> ModelRunnerOutput:
        """draft_probs: a draft model's q [k, V] for sampled rows with drafts, by index in `scheduled`."""
        rows = batch.sample_rows
        if len(logits) == len(rows):  # no drafts: one logits row per sampling row
            return self._sample(scheduled, rows, logits)
        starts = [0]
        for n in batch.num_logits:
            starts.append(starts[-1] + n)
        plain = [j for j, i in enumerate(rows) if not scheduled[i].num_draft_tokens]
        drafted = [j for j, i in enumerate(rows) if scheduled[i].num_draft_tokens]
        out = self._sample(scheduled, [rows[j] for j in plain], logits[[starts[j] for j in plain]]) if plain \
            else ModelRunnerOutput([[] for _ in scheduled])
        draft_probs = draft_probs or {}
        tokens, logprobs = self.verifier.verify(logits, [scheduled[rows[j]] for j in drafted],
                                                [starts[j] for j in drafted],
                                                [draft_probs.get(rows[j]) for j in drafted])
        if out.logprobs is None and any(lp is not None for lp in logprobs):
            out.logprobs = [[None] * len(t) for t in out.sampled]
        for j, kept, lp in zip(drafted, tokens, logprobs):
            out.sampled[rows[j]] = kept
            if out.logprobs is not None:
                filled: list[TokenLogprob | None] = [None] * len(kept) if lp is None else list(lp)
                out.logprobs[rows[j]] = filled
        return out

    def _sample(self, scheduled: list[ScheduledSequence], rows: list[int], logits: torch.Tensor) -> ModelRunnerOutput:
        """Rows without drafts: logits [len(rows), V], one per sampling row."""
        seqs = [scheduled[i].seq for i in rows]
        fanout = [scheduled[i].num_samples for i in rows]
        indices = None
        if any(k > 1 for k in fanout):
            # A parent's first sample: completions 0..n-1 each draw from a copy of its one logits row.
            logits = logits.index_select(0, self._tensor([j for j, k in enumerate(fanout) for _ in range(k)]))
            seqs = [seq for seq, k in zip(seqs, fanout) for _ in range(k)]
            indices = [i for k in fanout for i in range(k)]
        drawn = self.sampler.sample(logits, seqs, indices)
        sampled: list[list[int]] = [[] for _ in scheduled]
        logprobs: list[list[TokenLogprob | None]] | None = None
        if drawn.logprobs is not None:
            logprobs = [[] for _ in scheduled]
        at = 0
        for row, k in zip(rows, fanout):
            sampled[row] = drawn.token_ids[at:at + k]
            if logprobs is not None and drawn.logprobs is not None:
                logprobs[row] = drawn.logprobs[at:at + k]
            at += k
        return ModelRunnerOutput(sampled, logprobs)

    def _check_blocks(self, r: ComputeRow) -> None:
        end = r.start + len(r.token_ids)
        if not r.token_ids or not 0 <= r.num_logits <= len(r.token_ids):
            raise ValueError(f"{r.request_id}: {len(r.token_ids)} tokens with {r.num_logits} logits")
        if len(r.block_table) * self.block_size < end:
            raise ValueError(f"{r.request_id}: block table of {len(r.block_table)} blocks "
                             f"does not cover {end} tokens")
        table = r.block_table[:(end + self.block_size - 1) // self.block_size]
        if min(table) < 0 or max(table) >= self.num_kv_blocks:
            raise ValueError(f"{r.request_id}: block ids out of range [0, {self.num_kv_blocks})")

    def prepare(self, scheduled: list[ScheduledSequence]) -> StepBatch:
        """Build the step's tensors from the scheduled sequences (sample_rows index into them)."""
        return self.prepare_rows([_compute_row(s) for s in scheduled])

    def prepare_rows(self, rows: list[ComputeRow]) -> StepBatch:
        """Build a forward pass's tensors, checking every block id on the host first, so the kernels run
        unchecked and nothing synchronises with the device inside the layers."""
        bs = self.block_size
        # A row that needs logits at every token (a decode token, or a last token and its drafts to verify) runs
        # as decode tokens, one query each over its context so far: every layer writes the whole batch's KV
        # before it attends, so token j sees tokens j' < j of the same row. Those steps stay decode-only (the
        # CPU decoder stack, CUDA graphs) and compute each token exactly as a one-token step would.
        # A short prompt chunk runs that way too where the kernel set says its decode attention is the faster
        # (KernelSet.prompt_rows_as_decode): on the CPU a step of short prompts is then one decoder-stack call.
        short = self.kernels.prompt_rows_as_decode
        decode = [i for i, r in enumerate(rows)
                  if len(r.token_ids) == 1 or r.num_logits == len(r.token_ids) or len(r.token_ids) <= short]
        prefill = sorted(set(range(len(rows))) - set(decode))
        ids: list[int] = []
        positions: list[int] = []
        slots: list[int] = []
        last_index: dict[int, int] = {}

        # Decode: one query per token, attending over its sequence's block table.
        tables, lengths = [], []
        for i in decode:
            s = rows[i]
            self._check_blocks(s)
            for pos, token in enumerate(s.token_ids, start=s.start):
                ids.append(token)
                positions.append(pos)
                slots.append(s.block_table[pos // bs] * bs + pos % bs)
                lengths.append(pos + 1)
                tables.append(s.block_table[:pos // bs + 1])
            last_index[i] = len(ids) - 1

        # Prefill chunks: contiguous runs after the decode tokens.
        starts, chunk_tables, chunk_lens = [], [], []
        for i in prefill:
            s = rows[i]
            self._check_blocks(s)
            start, n = s.start, len(s.token_ids)
            end = start + n
            table = s.block_table[:(end + bs - 1) // bs]
            starts.append(len(ids))
            ids.extend(s.token_ids)
            positions.extend(range(start, end))
            slots.extend(table[p // bs] * bs + p % bs for p in range(start, end))
            chunk_tables.append(table)
            chunk_lens.append(end)
            last_index[i] = len(ids) - 1

        meta = AttentionMetadata(slot_mapping=self._tensor(slots), num_decode=len(lengths), validated=True)
        if decode:
            meta.decode_block_tables = self._tensor(_padded(tables))
            meta.decode_context_lens = self._tensor(lengths)
        if prefill:
            meta.prefill_query_start = self._tensor([*starts, len(ids)])
            meta.prefill_block_tables = self._tensor(_padded(chunk_tables))
            meta.prefill_context_lens = self._tensor(chunk_lens)
            meta.max_prefill_len = max(len(rows[i].token_ids) for i in prefill)
            for p, (start, table) in enumerate(zip(starts, chunk_tables)):
                end = start + len(rows[prefill[p]].token_ids)
                meta.prefills.append(PrefillChunk(start, end, chunk_lens[p], meta.prefill_block_tables[p, :len(table)]))
        sample_rows = [i for i in decode + prefill if rows[i].num_logits]
        num_logits = [rows[i].num_logits for i in sample_rows]
        return StepBatch(
            input_ids=self._tensor(ids),
            positions=self._tensor(positions),
            meta=meta,
            logits_indices=self._tensor([j for i, n in zip(sample_rows, num_logits)
                                         for j in range(last_index[i] - n + 1, last_index[i] + 1)]),
            sample_rows=sample_rows,
            num_logits=num_logits,
        )

    def _tensor(self, values: list[int] | list[list[int]]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.long, device=self.device)


def _compute_row(s: ScheduledSequence) -> ComputeRow:
    end = s.start + s.num_new_tokens - s.num_draft_tokens
    if end > s.seq.num_tokens:
        raise ValueError(f"{s.seq.request_id}: cannot compute tokens [{s.start}, {end}) of {s.seq.num_tokens}")
    num_logits = 1 + s.num_draft_tokens if s.samples else 0
    return ComputeRow(s.seq.request_id, s.input_ids, s.start, s.seq.block_table, num_logits)


def _padded(tables: list[list[int]]) -> list[list[int]]:
    width = max(len(t) for t in tables)
    return [t + [0] * (width - len(t)) for t in tables]
