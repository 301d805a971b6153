"""Decode-only steps on CUDA replayed from CUDA graphs, one per batch-size bucket (as vLLM and nano-vllm do).

A decode step of a small model is hundreds of tiny kernels; launching them from Python costs more than
running them. Each bucket's step is captured once at start-up over static input buffers; a step copies its
inputs in, pads the batch up to the bucket (padding rows write no KV: slot -1; attend to nothing: context 0)
and replays. Steps with prompt tokens, or more sequences than the largest bucket, run eagerly.

This is the only CUDA-specific module of the engine: the runner builds it only on a CUDA device with
EngineConfig.cuda_graphs, and only for kernel sets whose layers never synchronise with the host."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from workers.model.attention import AttentionMetadata

if TYPE_CHECKING:
    from torch.cuda import _POOL_HANDLE as _Pool  # a CUDA graph memory pool's handle (CUDAGraph.pool())

    from workers.engine.model_runner import ModelRunner, StepBatch


def buckets(max_batch: int) -> list[int]:
    """1, 2, 4, 8, then every 16 up to max_batch (and max_batch itself)."""
    sizes = {b for b in (1, 2, 4, 8) if b <= max_batch} | set(range(16, max_batch + 1, 16)) | {max_batch}
    return sorted(sizes)


class DecodeGraphs:
    def __init__(self, runner: ModelRunner, *, max_batch: int) -> None:
        self.runner = runner
        self.buckets = buckets(max_batch)
        device, largest = runner.device, self.buckets[-1]
        max_blocks = -(-runner.max_model_len // runner.block_size)
        # Static inputs every graph reads; a replay copies the step's values in.
        self.input_ids = torch.zeros(largest, dtype=torch.long, device=device)
        self.positions = torch.zeros(largest, dtype=torch.long, device=device)
        self.slots = torch.full((largest,), -1, dtype=torch.long, device=device)
        self.tables = torch.zeros((largest, max_blocks), dtype=torch.long, device=device)
        self.context_lens = torch.zeros(largest, dtype=torch.long, device=device)
        self.rows = torch.arange(largest, device=device)
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.replays: dict[int, Callable[[], None]] = {}  # bucket -> replay()
        self.logits: dict[int, torch.Tensor] = {}
        self._capture()

    def _forward(self, b: int) -> torch.Tensor:
        meta = AttentionMetadata(slot_mapping=self.slots[:b], num_decode=b, decode_block_tables=self.tables[:b],
                                 decode_context_lens=self.context_lens[:b], validated=True)
        r = self.runner
        logits: torch.Tensor = r.model(self.input_ids[:b], self.positions[:b], r.k_cache, r.v_cache, meta,
                                       self.rows[:b])
        return logits

    @torch.inference_mode()
    def _capture(self) -> None:
        pool: _Pool | None = None
        # Largest first: smaller graphs then fit in the memory pool the largest one reserved.
        for b in reversed(self.buckets):
            self.replays[b], self.logits[b], pool = self._capture_one(b, pool)

    def _capture_one(self, b: int, pool: _Pool | None) -> tuple[Callable[[], None], torch.Tensor, _Pool]:
        """(replay, the logits tensor a replay rewrites, the memory pool) for batch bucket b."""
        side = torch.cuda.Stream()  # type: ignore[no-untyped-call]  # torch leaves Stream() unannotated
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up: compiles the Triton kernels, creates cuBLAS handles
            self._forward(b)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            logits = self._forward(b)
        self.graphs[b] = graph  # keeps the captured graph alive
        return graph.replay, logits, graph.pool()

    def run(self, batch: StepBatch) -> torch.Tensor | None:
        """Logits for a decode-only step by replay, or None when the step is not one a graph covers."""
        meta = batch.meta
        n = meta.num_decode
        if meta.prefills or n == 0 or n > self.buckets[-1]:
            return None
        tables, lens = meta.decode_block_tables, meta.decode_context_lens
        if tables is None or lens is None:  # a decode step always has both
            return None
        b = next(size for size in self.buckets if size >= n)
        width = tables.shape[1]
        self.input_ids[:n].copy_(batch.input_ids)
        self.positions[:n].copy_(batch.positions)
        self.slots[:n].copy_(meta.slot_mapping)
        self.slots[n:b].fill_(-1)
        self.tables[:n, :width].copy_(tables)
        self.context_lens[:n].copy_(lens)
        self.context_lens[n:b].zero_()
        self.replays[b]()
        return self.logits[b].index_select(0, batch.logits_indices)
