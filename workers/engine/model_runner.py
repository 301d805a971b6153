"""Execution: the only place that turns scheduled sequences into tensors and runs the forward pass."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from workers.config import EngineConfig
from workers.engine.kv_budget import kv_cache_bytes
from workers.engine.sampler import Sampler
from workers.engine.scheduler_output import ModelRunnerOutput, ScheduledSequence, SchedulerOutput
from workers.model.attention import AttentionMetadata, PrefillChunk
from workers.model.kernel_sets.registry import select
from workers.model.registry import load_model
from workers.model.runtime import linear_weights, to_runtime


@dataclass(slots=True)
class StepBatch:
    """One step's flat batch: decode tokens first, then prefill chunks, all sequences concatenated."""

    input_ids: torch.Tensor       # [T] long
    positions: torch.Tensor       # [T] long
    meta: AttentionMetadata
    logits_indices: torch.Tensor  # [S] long: flat index of each sampling sequence's last token
    sample_rows: list[int]        # for each logits row, its index in SchedulerOutput.scheduled


class ModelRunner:
    def __init__(self, config: EngineConfig) -> None:
        if config.num_threads is not None:
            torch.set_num_threads(config.num_threads)
        self.device = torch.device(config.device)
        # Chosen once: every layer calls this set's ops; nothing tests the device per call.
        self.kernels = select(config.kernels, self.device, config.dtype, blocked_weights=config.block_quant_matmul,
                              decoder_stack=config.decoder_stack)
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
        self.graphs = None
        if self.device.type == "cuda" and config.cuda_graphs and self.kernels.supports_cuda_graphs:
            from workers.engine.cuda_graphs import DecodeGraphs  # the only CUDA-specific code, behind one switch

            self.graphs = DecodeGraphs(self, max_batch=config.max_num_seqs)

    def release(self, request_id: str) -> None:
        self.sampler.release(request_id)

    @torch.inference_mode()
    def execute(self, out: SchedulerOutput) -> ModelRunnerOutput:
        if out.blocks_to_copy:
            self.copy_blocks(out.blocks_to_copy)  # before any KV is written: the copies' owners read them
        if out.is_empty:
            return ModelRunnerOutput([])
        batch, logits = self.forward(out.scheduled)
        return self.sample(out.scheduled, batch, logits)

    @torch.inference_mode()
    def copy_blocks(self, pairs: list[tuple[int, int]]) -> None:
        """Copy-on-write: block dst gets block src's K and V, every layer at once. All sources are read
        before any destination is written."""
        for src, dst in pairs:
            if not (0 <= src < self.num_kv_blocks and 0 <= dst < self.num_kv_blocks):
                raise ValueError(f"block copy {src} -> {dst} out of range [0, {self.num_kv_blocks})")
        src = self._tensor([p[0] for p in pairs])
        dst = self._tensor([p[1] for p in pairs])
        for cache in (self.k_cache, self.v_cache):  # [layers, kv_heads, blocks, block_size, head_dim]
            cache.index_copy_(2, dst, cache.index_select(2, src))

    @torch.inference_mode()
    def forward(self, scheduled: list[ScheduledSequence]) -> tuple[StepBatch, torch.Tensor]:
        """Write the scheduled tokens' KV into the cache; float32 logits [num_sampling, vocab] in batch.sample_rows order."""
        batch = self.prepare(scheduled)
        logits = self.graphs.run(batch) if self.graphs is not None else None
        if logits is None:
            logits = self.model(batch.input_ids, batch.positions, self.k_cache, self.v_cache, batch.meta,
                                batch.logits_indices)
        return batch, logits

    def sample(self, scheduled: list[ScheduledSequence], batch: StepBatch, logits: torch.Tensor) -> ModelRunnerOutput:
        rows = batch.sample_rows
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
        logprobs = None if drawn.logprobs is None else [[] for _ in scheduled]
        at = 0
        for row, k in zip(rows, fanout):
            sampled[row] = drawn.token_ids[at:at + k]
            if logprobs is not None:
                logprobs[row] = drawn.logprobs[at:at + k]
            at += k
        return ModelRunnerOutput(sampled, logprobs)

    def _check_blocks(self, s: ScheduledSequence) -> None:
        end = s.start + s.num_new_tokens
        if s.num_new_tokens < 1 or end > s.seq.num_tokens:
            raise ValueError(f"{s.seq.request_id}: cannot compute tokens [{s.start}, {end}) of {s.seq.num_tokens}")
        if len(s.seq.block_table) * self.block_size < end:
            raise ValueError(f"{s.seq.request_id}: block table of {len(s.seq.block_table)} blocks "
                             f"does not cover {end} tokens")
        table = s.seq.block_table[:(end + self.block_size - 1) // self.block_size]
        if min(table) < 0 or max(table) >= self.num_kv_blocks:
            raise ValueError(f"{s.seq.request_id}: block ids out of range [0, {self.num_kv_blocks})")

    def prepare(self, scheduled: list[ScheduledSequence]) -> StepBatch:
        """Build the step's tensors from the sequences, checking every block id on the host first, so the
        kernels run unchecked and nothing synchronises with the device inside the layers."""
        bs = self.block_size
        decode = [i for i, s in enumerate(scheduled) if s.num_new_tokens == 1]
        prefill = [i for i, s in enumerate(scheduled) if s.num_new_tokens > 1]
        ids: list[int] = []
        positions: list[int] = []
        slots: list[int] = []
        last_index: dict[int, int] = {}

        # Decode: one token per sequence, attending over its block table.
        tables, lengths = [], []
        for i in decode:
            s = scheduled[i]
            self._check_blocks(s)
            pos, table = s.start, s.seq.block_table
            last_index[i] = len(ids)
            ids.append(s.seq.token_ids[pos])
            positions.append(pos)
            slots.append(table[pos // bs] * bs + pos % bs)
            lengths.append(pos + 1)
            tables.append(table[:pos // bs + 1])

        # Prefill chunks: contiguous runs after the decode tokens.
        starts, chunk_tables, chunk_lens = [], [], []
        for i in prefill:
            s = scheduled[i]
            self._check_blocks(s)
            start, n = s.start, s.num_new_tokens
            end = start + n
            table = s.seq.block_table[:(end + bs - 1) // bs]
            starts.append(len(ids))
            ids.extend(s.seq.token_ids[start:end])
            positions.extend(range(start, end))
            slots.extend(table[p // bs] * bs + p % bs for p in range(start, end))
            chunk_tables.append(table)
            chunk_lens.append(end)
            last_index[i] = len(ids) - 1

        meta = AttentionMetadata(slot_mapping=self._tensor(slots), num_decode=len(decode), validated=True)
        if decode:
            meta.decode_block_tables = self._tensor(_padded(tables))
            meta.decode_context_lens = self._tensor(lengths)
        if prefill:
            meta.prefill_query_start = self._tensor(starts + [len(ids)])
            meta.prefill_block_tables = self._tensor(_padded(chunk_tables))
            meta.prefill_context_lens = self._tensor(chunk_lens)
            meta.max_prefill_len = max(scheduled[i].num_new_tokens for i in prefill)
            for p, (start, table) in enumerate(zip(starts, chunk_tables)):
                end = start + scheduled[prefill[p]].num_new_tokens
                meta.prefills.append(PrefillChunk(start, end, chunk_lens[p], meta.prefill_block_tables[p, :len(table)]))
        sample_rows = [i for i in decode + prefill if scheduled[i].samples]
        return StepBatch(
            input_ids=self._tensor(ids),
            positions=self._tensor(positions),
            meta=meta,
            logits_indices=self._tensor([last_index[i] for i in sample_rows]),
            sample_rows=sample_rows,
        )

    def _tensor(self, values: list) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.long, device=self.device)


def _padded(tables: list[list[int]]) -> list[list[int]]:
    width = max(len(t) for t in tables)
    return [t + [0] * (width - len(t)) for t in tables]
