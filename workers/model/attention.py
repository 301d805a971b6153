"""Grouped-query attention over the paged KV cache.

The cache of one layer is a pair of tensors [num_kv_heads, num_blocks, block_size, head_dim]; a token's
K/V lives at flat slot block_id * block_size + offset. Heads lead so that gathering a batch's blocks yields
[num_kv_heads, num_seqs, context, head_dim] directly: the attention matmuls read it without a transpose copy. The runner builds one AttentionMetadata per step
(slot mapping, block tables, masks) and every layer reuses it, so per-layer work has no Python loops
over decode sequences."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from workers.kernels.cpu import check_block_tables, check_slots
from workers.model.layers import apply_rotary

if TYPE_CHECKING:
    from workers.kernels.cpu import CpuKernels


@dataclass(slots=True)
class PrefillChunk:
    """A run of >1 new tokens of one sequence, contiguous in the flat batch at [start, end)."""

    start: int
    end: int
    context_len: int              # tokens of this sequence in the cache once the chunk is written
    block_ids: torch.Tensor       # [ceil(context_len / block_size)] long
    mask: torch.Tensor | None     # [num_new, context_len] bool; None: nothing cached before, plain causal


@dataclass(slots=True)
class AttentionMetadata:
    slot_mapping: torch.Tensor                 # [num_tokens] long: where each new token's K/V goes
    num_decode: int = 0                        # decode tokens (one per sequence) come first in the batch
    decode_block_tables: torch.Tensor | None = None  # [num_decode, max_blocks] long, padded with block 0
    decode_context_lens: torch.Tensor | None = None  # [num_decode] long: tokens each decode query attends to
    # The next two serve the PyTorch path only (the runner leaves them out when the kernels run):
    # [KVH * num_decode * max_blocks] long: rows of the cache viewed as [KVH * num_blocks, block_size * D],
    # head-major, so one dim-0 index_select (a plain row copy) gathers every head's blocks.
    decode_gather: torch.Tensor | None = None
    decode_bias: torch.Tensor | None = None    # [KVH * num_decode, 1, max_blocks * block_size]: 0 or -inf
    prefills: list[PrefillChunk] = field(default_factory=list)
    validated: bool = False  # cache indices checked (once a step: the kernels run unchecked)

    def validate(self, k_cache: torch.Tensor) -> None:
        """Every index this step writes or reads lies inside the cache [KVH, num_blocks, block_size, D]."""
        num_blocks, block_size = k_cache.shape[1], k_cache.shape[2]
        check_slots(self.slot_mapping, num_blocks * block_size)
        if self.num_decode:
            check_block_tables(self.decode_block_tables, self.decode_context_lens, self.num_decode, num_blocks,
                               block_size)
        self.validated = True


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
        self.kernels: CpuKernels | None = None  # set by workers.kernels.cpu.attach (float32 models)

    def forward(self, qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, k_cache: torch.Tensor,
                v_cache: torch.Tensor, meta: AttentionMetadata) -> torch.Tensor:
        """qkv: [T, (H + 2 KVH) * D], the fused projection; cos, sin: [T, 1, D]; caches: [KVH, num_blocks,
        block_size, D]. Rotates q and k, writes k and v into the cache, attends. Returns [T, H * D]."""
        tokens = qkv.shape[0]
        q_size, kv_size = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        if self.kernels is not None:
            if not meta.validated:
                meta.validate(k_cache)
            # One fused pass: rotate q and k inside qkv, copy k and v to their cache slots.
            self.kernels.rotary_store_kv(qkv, cos.view(tokens, -1), sin.view(tokens, -1), meta.slot_mapping,
                                         k_cache, v_cache, self.num_heads, self.num_kv_heads, self.head_dim)
            q, k, v = (t.view(tokens, -1, self.head_dim) for t in qkv.split([q_size, kv_size, kv_size], dim=1))
        else:
            qk, v = qkv.split([q_size + kv_size, kv_size], dim=-1)
            # Rotate q and k heads together: [T, H + KVH, D], one set of kernels instead of two.
            qk = apply_rotary(qk.view(tokens, self.num_heads + self.num_kv_heads, self.head_dim), cos, sin)
            q, k = qk.split([self.num_heads, self.num_kv_heads], dim=1)
            v = v.view(tokens, self.num_kv_heads, self.head_dim)
            k_cache.view(self.num_kv_heads, -1, self.head_dim).index_copy_(1, meta.slot_mapping, k.transpose(0, 1))
            v_cache.view(self.num_kv_heads, -1, self.head_dim).index_copy_(1, meta.slot_mapping, v.transpose(0, 1))
        out = torch.empty((tokens, self.num_heads, self.head_dim), dtype=qkv.dtype)
        if meta.num_decode:
            self._decode(q[:meta.num_decode], k_cache, v_cache, meta, out[:meta.num_decode])
        for chunk in meta.prefills:
            out[chunk.start:chunk.end] = self._prefill(q, k, v, k_cache, v_cache, chunk)
        return out.view(tokens, q_size)

    def _decode(self, q, k_cache, v_cache, meta: AttentionMetadata, out: torch.Tensor) -> None:
        """Writes the decode queries' attention into out [num_decode, H, D]."""
        if self.kernels is not None:
            # Straight from the paged blocks: no padded copy of the context, no mask.
            self.kernels.paged_decode_attention(q, k_cache, v_cache, meta.decode_block_tables,
                                                meta.decode_context_lens, self.scale, out)
            return
        n, max_blocks = meta.decode_block_tables.shape
        length = max_blocks * k_cache.shape[2]
        batch = self.num_kv_heads * n
        rows = k_cache.shape[0] * k_cache.shape[1]
        # [KVH * n, L, D]: every decode sequence's context, padded to the longest; the bias masks the padding.
        keys = k_cache.view(rows, -1).index_select(0, meta.decode_gather).view(batch, length, self.head_dim)
        values = v_cache.view(rows, -1).index_select(0, meta.decode_gather).view(batch, length, self.head_dim)
        # Query heads of one KV group share its keys: per (kv head, sequence), [group, D] @ [D, L] -> [group, L],
        # scaled and masked in the same baddbmm call.
        queries = q.view(n, self.num_kv_heads, self.group, self.head_dim).transpose(0, 1)
        scores = torch.baddbmm(meta.decode_bias, queries.reshape(batch, self.group, self.head_dim),
                               keys.transpose(1, 2), alpha=self.scale)
        probs = torch.softmax(scores, dim=-1)
        heads_out = torch.bmm(probs, values)  # [KVH * n, group, D]
        out.copy_(heads_out.view(self.num_kv_heads, n, self.group, self.head_dim).transpose(0, 1).reshape(
            n, self.num_heads, self.head_dim))

    def _prefill(self, q, k, v, k_cache, v_cache, chunk: PrefillChunk) -> torch.Tensor:
        q_chunk = q[chunk.start:chunk.end].transpose(0, 1).unsqueeze(0)  # [1, H, n, D]
        if chunk.mask is None:
            # Nothing cached before this chunk: attend to its own fresh K/V, causally.
            keys = k[chunk.start:chunk.end].transpose(0, 1).unsqueeze(0)
            values = v[chunk.start:chunk.end].transpose(0, 1).unsqueeze(0)
            out = F.scaled_dot_product_attention(q_chunk, keys, values, is_causal=True, enable_gqa=True)
        else:
            keys = self._gather(k_cache, chunk)
            values = self._gather(v_cache, chunk)
            out = F.scaled_dot_product_attention(q_chunk, keys, values, attn_mask=chunk.mask, enable_gqa=True)
        return out[0].transpose(0, 1)

    def _gather(self, cache: torch.Tensor, chunk: PrefillChunk) -> torch.Tensor:
        # [1, KVH, context_len, D]
        flat = cache.index_select(1, chunk.block_ids).view(self.num_kv_heads, -1, self.head_dim)
        return flat[:, :chunk.context_len].unsqueeze(0)
