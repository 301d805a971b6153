"""A decode step through every decoder layer in one kernel call (tg_decoder_stack in cpu_stack.c).

Decode-only steps are most steps a server runs, and each is small: at batch 1 the layers' own work is ~16 ms
while returning to Python between ~300 kernel calls cost ~5 ms more. This is the CPU's counterpart of
replaying a captured CUDA graph: the same kernels, in the same order, with the per-layer addresses gathered
once at load time. A short prompt runs here as decode tokens too (KernelSet.prompt_rows_as_decode), one query
per token over its context so far; a step with a longer prompt chunk goes layer by layer."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from workers.kernels.cpu import I8_ACT, CpuKernels


class DecodeMetadata(Protocol):
    """What a decode-only step tells the stack (workers.model.attention.AttentionMetadata has these); kernels
    take it by shape, never import the model layer."""

    slot_mapping: torch.Tensor
    num_decode: int
    decode_block_tables: torch.Tensor | None
    decode_context_lens: torch.Tensor | None
    prefills: list
    validated: bool

    def validate(self, k_cache: torch.Tensor) -> None: ...


@dataclass(slots=True, frozen=True)
class LayerWeights:
    """One pre-norm decoder layer: two RMSNorm weights and four block-quantized linears (modules with q, dm, bits)."""

    input_norm: torch.Tensor
    post_norm: torch.Tensor
    qkv: torch.nn.Module
    o: torch.nn.Module
    gate_up: torch.nn.Module
    down: torch.nn.Module


@dataclass(slots=True, frozen=True)
class StackShape:
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    eps: float


class DecoderStack:
    def __init__(self, kernels: CpuKernels, layers: list[LayerWeights], shape: StackShape) -> None:
        self._kernels = kernels
        self._fn = kernels.decoder_stack_fn()
        self.shape = shape
        self.num_layers = len(layers)
        addresses, bits = [], []
        for layer in layers:
            linears = (layer.qkv, layer.o, layer.gate_up, layer.down)
            addresses += [layer.input_norm.data_ptr(), layer.post_norm.data_ptr()]
            for linear in linears:
                addresses += [linear.q.data_ptr(), linear.dm.data_ptr()]
            # A linear taking int8 input says so in its bits (cpu_qlinear.c reads the flag in the stack too).
            bits += [linear.bits | (I8_ACT if getattr(linear, "int8_activations", False) else 0)
                     for linear in linears]
        self._layers = layers  # keeps every tensor whose address the table holds alive
        self._addresses = torch.tensor(addresses, dtype=torch.int64)
        self._bits = torch.tensor(bits, dtype=torch.int64)
        s = shape
        qkv_width = (s.heads + 2 * s.kv_heads) * s.head_dim
        self._scratch_per_token = s.hidden + qkv_width + s.heads * s.head_dim + 3 * s.intermediate
        self.scale = 1.0 / s.head_dim ** 0.5

    def first(self, num_layers: int) -> DecoderStack:
        """The stack of the first num_layers layers only (an early-exit draft model)."""
        if not 1 <= num_layers <= self.num_layers:
            raise ValueError(f"num_layers must be in [1, {self.num_layers}], got {num_layers}")
        return DecoderStack(self._kernels, self._layers[:num_layers], self.shape)

    def run(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, k_cache: torch.Tensor,
            v_cache: torch.Tensor, meta: DecodeMetadata) -> torch.Tensor:
        """x [T, hidden], every token a decode token; caches [L, KVH, num_blocks, block_size, D]. Returns x,
        overwritten with the last layer's output."""
        s, tokens = self.shape, x.shape[0]
        if meta.num_decode != tokens or meta.prefills:
            raise ValueError("the decoder stack runs decode-only steps")
        if x.dtype != torch.float32 or not x.is_contiguous() or x.shape[1] != s.hidden:
            raise ValueError(f"x must be contiguous float32 [T, {s.hidden}]")
        if k_cache.shape[0] != self.num_layers or not (k_cache.is_contiguous() and v_cache.is_contiguous()):
            raise ValueError(f"caches must be contiguous with {self.num_layers} layers")
        if not meta.validated:
            meta.validate(k_cache[0])
        cos, sin = cos.reshape(tokens, s.head_dim).contiguous(), sin.reshape(tokens, s.head_dim).contiguous()
        scratch = torch.empty(tokens * self._scratch_per_token)
        _, _, num_blocks, block_size, _ = k_cache.shape
        tables = meta.decode_block_tables
        self._fn(x.data_ptr(), tokens, self.num_layers, self._addresses.data_ptr(), self._bits.data_ptr(),
                 s.hidden, s.intermediate, s.heads, s.kv_heads, s.head_dim, s.eps, cos.data_ptr(), sin.data_ptr(),
                 meta.slot_mapping.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(), num_blocks, block_size,
                 tables.data_ptr(), tables.shape[1], meta.decode_context_lens.data_ptr(), self.scale,
                 scratch.data_ptr())
        return x


