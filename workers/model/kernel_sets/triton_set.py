"""The Triton kernel set: every layer through workers/kernels/triton. On CUDA the kernels compile for the GPU;
on CPU tensors they run under Triton's interpreter (TRITON_INTERPRET=1), which is how CI runs this path.

Dense linears use the device's GEMM (cuBLAS on CUDA); weights in blocks (GGUF) or quantized at load time
(int8, int4) stay in that form and are dequantized inside the Triton matmuls."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from workers.kernels.triton.decode_attention import paged_decode_attention
from workers.kernels.triton.prefill_attention import paged_prefill_attention
from workers.kernels.triton.rms_norm import rms_norm
from workers.kernels.triton.rotary_kv import rotary_store_kv
from workers.kernels.triton.silu_mul import silu_mul
from workers.model.gguf_weight import GGUFWeight
from workers.model.kernel_sets.torch_set import TorchKernels
from workers.model.quantize import Int4Weight, Int8Weight
from workers.model.triton_linear import GGUFLinear, Int4Linear, Int8Linear

if TYPE_CHECKING:
    from workers.model.attention import AttentionMetadata, PagedAttention

# Weight type -> the module that multiplies by it in its storage format.
LINEARS: dict[type, type[nn.Module]] = {GGUFWeight: GGUFLinear, Int8Weight: Int8Linear, Int4Weight: Int4Linear}


class TritonKernelSet(TorchKernels):
    name = "triton"
    reads_blocks = True
    supports_cuda_graphs = True  # no host syncs in the layers; padded rows (slot -1, context 0) are no-ops

    def describe(self) -> str:
        return f"Triton kernels on {self.device}" + (" (interpreter)" if self.device.type == "cpu" else "")

    def prepare(self, meta: AttentionMetadata, k_cache: torch.Tensor) -> None:
        if not meta.validated:
            meta.validate(k_cache)
        meta.prepared_by = self  # the kernels read block tables and flat prefill tensors as the runner built them

    def rms_norm(self, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        return rms_norm(x, weight, eps)

    def silu_mul(self, gate_up: torch.Tensor) -> torch.Tensor:
        return silu_mul(gate_up)

    def rotary_store_kv(self, qkv, cos, sin, k_cache, v_cache, meta: AttentionMetadata, attn: PagedAttention):
        tokens, heads, kv_heads, dim = qkv.shape[0], attn.num_heads, attn.num_kv_heads, attn.head_dim
        rotary_store_kv(qkv, cos.view(tokens, dim), sin.view(tokens, dim), meta.slot_mapping, k_cache, v_cache,
                        heads, kv_heads, dim, validate=False)
        q, k, v = qkv.split([heads * dim, kv_heads * dim, kv_heads * dim], dim=1)
        return q.view(tokens, heads, dim), k.view(tokens, kv_heads, dim), v.view(tokens, kv_heads, dim)

    def attention(self, q, k, v, k_cache, v_cache, meta: AttentionMetadata, attn: PagedAttention, out) -> None:
        n = meta.num_decode
        if n:
            paged_decode_attention(q[:n], k_cache, v_cache, meta.decode_block_tables, meta.decode_context_lens,
                                   attn.scale, out[:n], validate=False)
        if meta.prefills:
            # Every chunk in one launch, straight from the paged cache (their K/V were just written there).
            paged_prefill_attention(q, k_cache, v_cache, meta.prefill_block_tables, meta.prefill_query_start,
                                    meta.prefill_context_lens, attn.scale, out, max_query_len=meta.max_prefill_len,
                                    validate=False)

    def linear(self, weight: object, dense: nn.Module) -> nn.Module:
        if isinstance(weight, torch.Tensor):
            return dense
        return LINEARS[type(weight)](weight)
