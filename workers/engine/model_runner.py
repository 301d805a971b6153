"""Execution: the only place that turns scheduled sequences into tensors and runs the forward pass."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from workers.config import EngineConfig
from workers.engine.sampler import Sampler
from workers.engine.scheduler_output import ScheduledSequence, SchedulerOutput
from workers.kernels import cpu
from workers.model import block_quant, quant_linear
from workers.model.attention import AttentionMetadata, PrefillChunk
from workers.model.packed_linear import can_pack, convert_for_runtime
from workers.model.registry import load_model

_ELEMENT_BYTES = {torch.float32: 4, torch.bfloat16: 2}


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
        self.kernels = cpu.load() if config.cpu_kernels and config.dtype == "float32" else None
        loaded = load_model(config.model, config.dtype,
                            block_weights=self.kernels is not None and config.block_quant_matmul)
        self.model = loaded.model
        if loaded.block_weights:
            # Linears with GGUF blocks the kernel can tile read them through it; the rest get oneDNN packing.
            packed = {path: block_quant.pack(b) for path, b in loaded.block_weights.items() if block_quant.can_pack(b)}
            quant_linear.convert_for_runtime(self.model, packed, self.kernels)
        if can_pack(self.model):
            convert_for_runtime(self.model)
        if self.kernels is not None:
            cpu.attach(self.model, self.kernels)
            enable = getattr(self.model, "enable_decoder_stack", None)
            if enable is not None and config.decoder_stack:
                enable(self.kernels)
        self.tokenizer = loaded.tokenizer
        self.block_size = config.block_size
        context = self.model.max_context_len
        if config.max_model_len is not None and config.max_model_len > context:
            raise ValueError(f"max_model_len {config.max_model_len} exceeds the model's context length {context}")
        self.max_model_len = config.max_model_len or context
        cfg = self.model.config
        dtype = self.model.dtype
        # K and V, every layer, one block.
        self.kv_bytes_per_block = 2 * cfg.num_layers * self.block_size * cfg.num_kv_heads * cfg.head_dim * _ELEMENT_BYTES[dtype]
        self.num_kv_blocks = config.num_kv_blocks or config.kv_cache_memory_bytes // self.kv_bytes_per_block
        if self.num_kv_blocks < 1:
            raise ValueError(f"kv_cache_memory_bytes {config.kv_cache_memory_bytes} holds no block "
                             f"({self.kv_bytes_per_block} bytes each)")
        shape = (cfg.num_layers, cfg.num_kv_heads, self.num_kv_blocks, self.block_size, cfg.head_dim)
        self.k_cache = torch.zeros(shape, dtype=dtype)  # [layers, kv_heads, blocks, block_size, head_dim]
        self.v_cache = torch.zeros(shape, dtype=dtype)
        self.sampler = Sampler(config.seed)

    def release(self, request_id: str) -> None:
        self.sampler.release(request_id)

    @torch.inference_mode()
    def execute(self, out: SchedulerOutput) -> list[int | None]:
        if out.is_empty:
            return []
        batch, logits = self.forward(out.scheduled)
        return self.sample(out.scheduled, batch, logits)

    @torch.inference_mode()
    def forward(self, scheduled: list[ScheduledSequence]) -> tuple[StepBatch, torch.Tensor]:
        """Write the scheduled tokens' KV into the cache; float32 logits [num_sampling, vocab] in batch.sample_rows order."""
        batch = self.prepare(scheduled)
        logits = self.model(batch.input_ids, batch.positions, self.k_cache, self.v_cache, batch.meta,
                            batch.logits_indices)
        return batch, logits

    def sample(self, scheduled: list[ScheduledSequence], batch: StepBatch, logits: torch.Tensor) -> list[int | None]:
        seqs = [scheduled[i].seq for i in batch.sample_rows]
        tokens = self.sampler.sample(logits, [s.params for s in seqs], [s.request_id for s in seqs])
        result: list[int | None] = [None] * len(scheduled)
        for row, token in zip(batch.sample_rows, tokens):
            result[row] = token
        return result

    def _check_blocks(self, s: ScheduledSequence) -> None:
        end = s.start + s.num_new_tokens
        if s.num_new_tokens < 1 or end > s.seq.num_tokens:
            raise ValueError(f"{s.seq.request_id}: cannot compute tokens [{s.start}, {end}) of {s.seq.num_tokens}")
        if len(s.seq.block_table) * self.block_size < end:
            raise ValueError(f"{s.seq.request_id}: block table of {len(s.seq.block_table)} blocks "
                             f"does not cover {end} tokens")

    def prepare(self, scheduled: list[ScheduledSequence]) -> StepBatch:
        bs = self.block_size
        decode = [i for i, s in enumerate(scheduled) if s.num_new_tokens == 1]
        prefill = [i for i, s in enumerate(scheduled) if s.num_new_tokens > 1]
        ids: list[int] = []
        positions: list[int] = []
        slots: list[int] = []
        last_index: dict[int, int] = {}

        # Decode: one token per sequence, attending over its padded block table.
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
        meta = AttentionMetadata(slot_mapping=torch.empty(0, dtype=torch.long), num_decode=len(decode))
        if decode:
            max_blocks = max(len(t) for t in tables)
            meta.decode_block_tables = torch.tensor([t + [0] * (max_blocks - len(t)) for t in tables], dtype=torch.long)
            meta.decode_context_lens = torch.tensor(lengths, dtype=torch.long)
        if decode and self.kernels is None:
            heads = torch.arange(self.model.config.num_kv_heads).unsqueeze(1) * self.num_kv_blocks
            meta.decode_gather = (heads + meta.decode_block_tables.view(1, -1)).view(-1)
            visible = torch.arange(max_blocks * bs).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
            bias = torch.zeros(visible.shape, dtype=self.model.dtype).masked_fill_(~visible, float("-inf"))
            # [KVH * n, 1, L], the batch order of the attention's baddbmm; broadcasts over the query group.
            meta.decode_bias = bias.repeat(self.model.config.num_kv_heads, 1).unsqueeze(1)

        # Prefill chunks: contiguous runs after the decode tokens.
        for i in prefill:
            s = scheduled[i]
            self._check_blocks(s)
            start, n = s.start, s.num_new_tokens
            end = start + n
            table = s.seq.block_table[:(end + bs - 1) // bs]
            flat = len(ids)
            ids.extend(s.seq.token_ids[start:end])
            positions.extend(range(start, end))
            slots.extend(table[p // bs] * bs + p % bs for p in range(start, end))
            mask = None
            if start > 0:
                # Query start+q sees cached keys 0..start+q.
                mask = torch.arange(end).unsqueeze(0) <= torch.arange(start, end).unsqueeze(1)
            meta.prefills.append(PrefillChunk(flat, flat + n, end, torch.tensor(table, dtype=torch.long), mask))
            last_index[i] = flat + n - 1

        meta.slot_mapping = torch.tensor(slots, dtype=torch.long)
        sample_rows = [i for i in decode + prefill if scheduled[i].samples]
        return StepBatch(
            input_ids=torch.tensor(ids, dtype=torch.long),
            positions=torch.tensor(positions, dtype=torch.long),
            meta=meta,
            logits_indices=torch.tensor([last_index[i] for i in sample_rows], dtype=torch.long),
            sample_rows=sample_rows,
        )
