"""Grouped-query attention over the paged KV cache.

The cache of one layer is a pair of tensors
    # [num_kv_heads, num_blocks, block_size, head_dim]
and a token's K/V lives at flat slot block_id * block_size + offset; every kernel set (PyTorch, the CPU
kernels, Triton) reads this one layout through block tables. The runner builds one AttentionMetadata per
step (slot mapping, block tables, context lengths) and every layer reuses it; the layer's kernel set
derives whatever else it needs once per step in `prepare`, so per-layer work has no Python loops over
sequences."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from workers.model.kernel_sets.base import KernelSet


@dataclass(slots=True)
class PrefillChunk:
    """A run of >1 new tokens of one sequence, contiguous in the flat batch at [start, end)."""

    start: int
    end: int
    context_len: int              # tokens of this sequence in the cache once the chunk is written
    block_ids: torch.Tensor       # [ceil(context_len / block_size)] long
    # [num_new, context_len] bool, or None when nothing was cached before the chunk (plain causal). Derived by
    # the kernel sets that attend chunk by chunk (PyTorch, CPU); tests may give it.
    mask: torch.Tensor | None = None


@dataclass(slots=True)
class AttentionMetadata:
    slot_mapping: torch.Tensor                 # [num_tokens] long: where each new token's K/V goes (< 0: skip)
    num_decode: int = 0                        # decode tokens (one per sequence) come first in the batch
    decode_block_tables: torch.Tensor | None = None  # [num_decode, max_blocks] long, padded with block 0
    decode_context_lens: torch.Tensor | None = None  # [num_decode] long: tokens each decode query attends to
    prefills: list[PrefillChunk] = field(default_factory=list)
    # The prefill chunks again as flat tensors, for kernels that take every chunk in one launch:
    prefill_query_start: torch.Tensor | None = None   # [P + 1] long: chunk p's rows are [qs[p], qs[p+1])
    prefill_block_tables: torch.Tensor | None = None  # [P, max_blocks] long, padded with block 0
    prefill_context_lens: torch.Tensor | None = None  # [P] long
    max_prefill_len: int = 0
    # Derived by the PyTorch kernel set's prepare: [KVH * num_decode * max_blocks] long rows of the cache viewed
    # as [KVH * num_blocks, block_size * D], head-major, so one dim-0 index_select gathers every head's blocks;
    # and [KVH * num_decode, 1, max_blocks * block_size] additive masks (0 or -inf) over the padding.
    decode_gather: torch.Tensor | None = None
    decode_bias: torch.Tensor | None = None
    validated: bool = False  # cache indices checked (the runner does it on the host; kernels run unchecked)
    prepared_by: KernelSet | None = None

    def validate(self, k_cache: torch.Tensor) -> None:
        """Every index this step writes or reads lies inside the cache [KVH, num_blocks, block_size, D].
        Synchronises with the device: the runner checks its host-side lists instead and sets `validated`."""
        num_blocks, block_size = k_cache.shape[1], k_cache.shape[2]
        _in_range(self.slot_mapping, "slot_mapping", -1, num_blocks * block_size)
        if self.num_decode:
            tables, lens = self.decode_block_tables, self.decode_context_lens
            if tables is None or lens is None or tables.shape[0] != self.num_decode or lens.shape[0] != self.num_decode:
                raise ValueError("decode block tables and context lengths need one row per decode token")
            _in_range(tables, "block ids", 0, num_blocks)
            _in_range(lens, "context_lens", 1, tables.shape[1] * block_size + 1)
        for chunk in self.prefills:
            _in_range(chunk.block_ids, "block ids", 0, num_blocks)
            if chunk.block_ids.numel() * block_size < chunk.context_len:
                raise ValueError("a prefill chunk's block table does not cover its context")
        self.validated = True


def _in_range(t: torch.Tensor, name: str, low: int, high: int) -> None:
    if t.numel():
        lo, hi = t.aminmax()
        if int(lo) < low or int(hi) >= high:
            raise ValueError(f"{name} out of range [{low}, {high})")


class PagedAttention(torch.nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int) -> None:
        super().__init__()
        if num_heads % num_kv_heads:
            raise ValueError(f"num_heads {num_heads} is not a multiple of num_kv_heads {num_kv_heads}")
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.group = num_heads // num_kv_heads
        self.head_dim = head_dim
        self.scale = 1.0 / math.sqrt(head_dim)
        self.kernels: KernelSet | None = None  # set once by the model's kernel set

    def forward(self, qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, k_cache: torch.Tensor,
                v_cache: torch.Tensor, meta: AttentionMetadata) -> torch.Tensor:
        """qkv: [T, (H + 2 KVH) * D], the fused projection; cos, sin: [T, 1, D]; caches: [KVH, num_blocks,
        block_size, D]. Rotates q and k, writes k and v into the cache, attends. Returns [T, H * D]."""
        tokens = qkv.shape[0]
        q, k, v = self.kernels.rotary_store_kv(qkv, cos, sin, k_cache, v_cache, meta, self)
        out = torch.empty((tokens, self.num_heads, self.head_dim), dtype=qkv.dtype, device=qkv.device)
        self.kernels.attention(q, k, v, k_cache, v_cache, meta, self, out)
        return out.view(tokens, self.num_heads * self.head_dim)
