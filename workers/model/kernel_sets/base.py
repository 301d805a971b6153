"""What a kernel set provides: the interface the model's layers and the runner program against."""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import torch
from torch import nn

if TYPE_CHECKING:
    from workers.model.attention import AttentionMetadata, PagedAttention


class KernelSet(Protocol):
    name: str
    device: torch.device
    reads_blocks: bool  # linears multiply by weights in blocks (GGUF, int8, int4) rather than dense ones
    supports_cuda_graphs: bool  # its decode step may be captured and replayed
    # Prompt chunks of at most this many tokens run as decode tokens (one query each over the paged context, as a
    # draft being verified does) where this set attends those faster than a chunk's causal attention; 0: never.
    prompt_rows_as_decode: int

    def prepare(self, meta: AttentionMetadata, k_cache: torch.Tensor) -> None:
        """Once a step, before the layers: check indices unless the runner did, derive per-step tensors."""

    def rms_norm(self, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        """x [rows, dim] -> dense [rows, dim]."""

    def silu_mul(self, gate_up: torch.Tensor) -> torch.Tensor:
        """gate_up [rows, 2 I] -> silu(gate) * up, [rows, I]."""

    def rotary_store_kv(self, qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, k_cache: torch.Tensor,
                        v_cache: torch.Tensor, meta: AttentionMetadata,
                        attn: PagedAttention) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rotate q and k of the fused qkv [T, (H + 2 KVH) D] (cos, sin [T, 1, D]), write k and v into the
        caches at meta.slot_mapping; returns q [T, H, D], k and v [T, KVH, D]."""

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, k_cache: torch.Tensor,
                  v_cache: torch.Tensor, meta: AttentionMetadata, attn: PagedAttention, out: torch.Tensor) -> None:
        """Writes every query's attention over its sequence's cached context into out [T, H, D]."""

    def linear(self, weight: object, dense: nn.Module) -> nn.Module:
        """The module one linear runs as: `weight` is its dense tensor, GGUF blocks or a load-time quantized
        weight; `dense` is the model's Linear holding the dense values (returned as is when nothing is faster)."""

    def finalize(self, model: nn.Module) -> None:
        """After every weight is in place on the device: whole-model set-up (the CPU set's decoder stack)."""

    def describe(self) -> str:
        """One line for logs and benchmarks."""
