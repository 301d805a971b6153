"""The PyTorch kernel set: plain ops on any device, the reference the compiled sets are held to."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from workers.model.layers import Linear, apply_rotary, rms_norm

if TYPE_CHECKING:
    from workers.model.attention import AttentionMetadata, PagedAttention, PrefillChunk


class TorchKernels:
    name = "torch"
    reads_blocks = False  # quantized weights run dense (dequantized once at load)
    supports_cuda_graphs = False  # index_copy_ cannot skip a padded batch's slots
    prompt_rows_as_decode = 0  # its decode attention gathers and pads every context: SDPA is the faster prefill

    def __init__(self, device: torch.device | str = "cpu") -> None:
        self.device = torch.device(device)

    def describe(self) -> str:
        return f"PyTorch ops on {self.device}"

    # ---- once a step ------------------------------------------------------------------

    def prepare(self, meta: AttentionMetadata, k_cache: torch.Tensor) -> None:
        if not meta.validated:
            meta.validate(k_cache)
        self._prepare_decode(meta, k_cache)
        self._prepare_prefill(meta)
        meta.prepared_by = self

    def _prepare_decode(self, meta: AttentionMetadata, k_cache: torch.Tensor) -> None:
        if not meta.num_decode or meta.decode_gather is not None:
            return
        kv_heads, num_blocks, block_size, _ = k_cache.shape
        tables, device = meta.decode_block_tables, k_cache.device
        max_blocks = tables.shape[1]
        heads = torch.arange(kv_heads, device=device).unsqueeze(1) * num_blocks
        meta.decode_gather = (heads + tables.view(1, -1)).view(-1)
        positions = torch.arange(max_blocks * block_size, device=device)
        visible = positions.unsqueeze(0) < meta.decode_context_lens.unsqueeze(1)
        bias = torch.zeros(visible.shape, dtype=k_cache.dtype, device=device).masked_fill_(~visible, float("-inf"))
        # [KVH * n, 1, L], the batch order of the attention's baddbmm; broadcasts over the query group.
        meta.decode_bias = bias.repeat(kv_heads, 1).unsqueeze(1)

    def _prepare_prefill(self, meta: AttentionMetadata) -> None:
        for chunk in meta.prefills:
            new = chunk.end - chunk.start
            if chunk.mask is None and chunk.context_len > new:
                # Query start + q sees cached keys 0..start + q.
                start, device = chunk.context_len - new, chunk.block_ids.device
                chunk.mask = (torch.arange(chunk.context_len, device=device).unsqueeze(0)
                              <= torch.arange(start, chunk.context_len, device=device).unsqueeze(1))

    # ---- per layer --------------------------------------------------------------------

    def rms_norm(self, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        return rms_norm(x, weight, eps)

    def silu_mul(self, gate_up: torch.Tensor) -> torch.Tensor:
        gate, up = gate_up.chunk(2, dim=-1)
        return F.silu(gate).mul_(up)

    def rotary_store_kv(self, qkv, cos, sin, k_cache, v_cache, meta: AttentionMetadata, attn: PagedAttention):
        tokens, heads, kv_heads, dim = qkv.shape[0], attn.num_heads, attn.num_kv_heads, attn.head_dim
        qk, v = qkv.split([(heads + kv_heads) * dim, kv_heads * dim], dim=-1)
        # Rotate q and k heads together: [T, H + KVH, D], one set of kernels instead of two.
        qk = apply_rotary(qk.view(tokens, heads + kv_heads, dim), cos, sin)
        q, k = qk.split([heads, kv_heads], dim=1)
        v = v.view(tokens, kv_heads, dim)
        k_cache.view(kv_heads, -1, dim).index_copy_(1, meta.slot_mapping, k.transpose(0, 1))
        v_cache.view(kv_heads, -1, dim).index_copy_(1, meta.slot_mapping, v.transpose(0, 1))
        return q, k, v

    def attention(self, q, k, v, k_cache, v_cache, meta: AttentionMetadata, attn: PagedAttention, out) -> None:
        if meta.num_decode:
            self._decode(q[:meta.num_decode], k_cache, v_cache, meta, attn, out[:meta.num_decode])
        for chunk in meta.prefills:
            out[chunk.start:chunk.end] = self._prefill(q, k, v, k_cache, v_cache, chunk, attn)

    def _decode(self, q, k_cache, v_cache, meta: AttentionMetadata, attn: PagedAttention, out) -> None:
        """Every decode sequence's context gathered, padded to the longest; the bias masks the padding."""
        n, max_blocks = meta.decode_block_tables.shape
        kv_heads, dim, group = attn.num_kv_heads, attn.head_dim, attn.group
        length = max_blocks * k_cache.shape[2]
        batch = kv_heads * n
        rows = k_cache.shape[0] * k_cache.shape[1]
        # [KVH * n, L, D]
        keys = k_cache.view(rows, -1).index_select(0, meta.decode_gather).view(batch, length, dim)
        values = v_cache.view(rows, -1).index_select(0, meta.decode_gather).view(batch, length, dim)
        # Query heads of one KV group share its keys: per (kv head, sequence), [group, D] @ [D, L] -> [group, L],
        # scaled and masked in the same baddbmm call.
        queries = q.view(n, kv_heads, group, dim).transpose(0, 1)
        scores = torch.baddbmm(meta.decode_bias, queries.reshape(batch, group, dim), keys.transpose(1, 2),
                               alpha=attn.scale)
        heads_out = torch.bmm(torch.softmax(scores, dim=-1), values)  # [KVH * n, group, D]
        out.copy_(heads_out.view(kv_heads, n, group, dim).transpose(0, 1).reshape(n, attn.num_heads, dim))

    def _prefill(self, q, k, v, k_cache, v_cache, chunk: PrefillChunk, attn: PagedAttention) -> torch.Tensor:
        q_chunk = q[chunk.start:chunk.end].transpose(0, 1).unsqueeze(0)  # [1, H, n, D]
        if chunk.mask is None:
            # Nothing cached before this chunk: attend to its own fresh K/V, causally.
            keys = k[chunk.start:chunk.end].transpose(0, 1).unsqueeze(0)
            values = v[chunk.start:chunk.end].transpose(0, 1).unsqueeze(0)
            out = F.scaled_dot_product_attention(q_chunk, keys, values, is_causal=True, enable_gqa=True)
        else:
            keys = _gather(k_cache, chunk, attn)
            values = _gather(v_cache, chunk, attn)
            out = F.scaled_dot_product_attention(q_chunk, keys, values, attn_mask=chunk.mask, enable_gqa=True)
        return out[0].transpose(0, 1)

    # ---- weights ----------------------------------------------------------------------

    def linear(self, weight: object, dense: nn.Module) -> nn.Module:
        """Quantized weights run dense here: their exact dequantized values, in the model's dtype."""
        if isinstance(weight, torch.Tensor):
            return dense
        module = Linear(dense.in_features, dense.out_features, dtype=dense.weight.dtype)
        module.weight = nn.Parameter(weight.dequantize().to(dense.weight.dtype), requires_grad=False)
        return module

    def finalize(self, model: nn.Module) -> None:
        pass


def _gather(cache: torch.Tensor, chunk: PrefillChunk, attn: PagedAttention) -> torch.Tensor:
    # [1, KVH, context_len, D]
    flat = cache.index_select(1, chunk.block_ids).view(attn.num_kv_heads, -1, attn.head_dim)
    return flat[:, :chunk.context_len].unsqueeze(0)
