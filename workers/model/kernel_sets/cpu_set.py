"""The CPU kernel set: the compiled C kernels (workers/kernels/cpu_*.c), float32.

Norms, SiLU-and-multiply, rotary + KV writes and decode attention run in C. A prompt chunk of up to
PROMPT_ROWS_AS_DECODE tokens runs as decode tokens (the runner builds it so); a longer one attends through
PyTorch's SDPA (inherited). Linears whose weight comes in blocks (GGUF Q4_0/Q4_1/Q8_0, or int8/int4 quantized
at load) multiply straight from them; dense ones get oneDNN's packed layout. Decode-only steps can run every
layer in one kernel call (the decoder stack)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from workers.kernels.cpu import CpuKernels
from workers.model import block_quant
from workers.model.kernel_sets.torch_set import TorchKernels
from workers.model.packed_linear import PackedLinear, can_pack_dense
from workers.model.quant_linear import BlockQuantLinear

if TYPE_CHECKING:
    from workers.model.attention import AttentionMetadata, PagedAttention


# benchmarks/prompt_rows.py (Zen 4, 2 cores), the step computing the prompts as decode tokens / as chunks: a wave
# of 16 chats (~15 new tokens each) 0.89; one prompt of 32 tokens 0.82, 128: 0.90, 256: 0.95, 512: 0.91, 1000: 1.01.
PROMPT_ROWS_AS_DECODE = 512


class CpuKernelSet(TorchKernels):
    name = "cpu"
    prompt_rows_as_decode = PROMPT_ROWS_AS_DECODE

    def __init__(self, kernels: CpuKernels, *, blocked_weights: bool = True, decoder_stack: bool = True,
                 int8_activations: bool = False) -> None:
        super().__init__("cpu")
        self.int8_activations = int8_activations  # blocked weights' linears quantize their input to int8
        self.ops = kernels.unchecked()  # layers' inputs are shaped by construction; indices checked once a step
        self._kernels = kernels
        self.blocked_weights = blocked_weights
        self.reads_blocks = blocked_weights
        self.decoder_stack = decoder_stack

    def describe(self) -> str:
        return "compiled CPU kernels" + (", blocked weights" if self.blocked_weights else "") + \
            (", int8 activations" if self.int8_activations else "")

    def _prepare_decode(self, meta: AttentionMetadata, k_cache: torch.Tensor) -> None:
        pass  # the decode kernel reads the blocks through the tables: nothing to gather

    def rms_norm(self, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        return self.ops.rms_norm(x, weight, eps)  # one pass, no temporaries

    def silu_mul(self, gate_up: torch.Tensor) -> torch.Tensor:
        return self.ops.silu_mul(gate_up)

    def rotary_store_kv(self, qkv, cos, sin, k_cache, v_cache, meta: AttentionMetadata, attn: PagedAttention):
        tokens, heads, kv_heads, dim = qkv.shape[0], attn.num_heads, attn.num_kv_heads, attn.head_dim
        # One fused pass: rotate q and k inside qkv, copy k and v to their cache slots.
        self.ops.rotary_store_kv(qkv, cos.view(tokens, -1), sin.view(tokens, -1), meta.slot_mapping, k_cache,
                                 v_cache, heads, kv_heads, dim)
        q, k, v = qkv.split([heads * dim, kv_heads * dim, kv_heads * dim], dim=1)
        return q.view(tokens, heads, dim), k.view(tokens, kv_heads, dim), v.view(tokens, kv_heads, dim)

    def _decode(self, q, k_cache, v_cache, meta: AttentionMetadata, attn: PagedAttention, out) -> None:
        # Straight from the paged blocks: no padded copy of the context, no mask.
        self.ops.paged_decode_attention(q, k_cache, v_cache, meta.decode_block_tables, meta.decode_context_lens,
                                        attn.scale, out)

    def linear(self, weight: object, dense: nn.Module) -> nn.Module:
        if not isinstance(weight, torch.Tensor):
            if self.blocked_weights:
                blocks = weight.blocks()
                if block_quant.can_pack(blocks):
                    return BlockQuantLinear(block_quant.pack(blocks), self._kernels,
                                            int8_activations=self.int8_activations)
            dense = super().linear(weight, dense)  # the weight's exact dequantized values, dense
        return PackedLinear(dense) if can_pack_dense(dense.weight) else dense

    def finalize(self, model: nn.Module) -> None:
        enable = getattr(model, "enable_decoder_stack", None)
        if self.decoder_stack and enable is not None:
            enable(self._kernels)
