"""Architecture-neutral building blocks: RMSNorm, rotary embedding, SwiGLU MLP, a replaceable linear."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

if TYPE_CHECKING:
    from workers.model.kernel_sets.base import KernelSet


class Linear(nn.Linear):
    """The one linear every model builds with. A quantized runtime swaps instances of this class
    for its own module (gpt-fast style: `create_quantized_state_dict`, then `convert_for_runtime`)."""

    def __init__(self, in_features: int, out_features: int, *, dtype: torch.dtype) -> None:
        super().__init__(in_features, out_features, bias=False, dtype=dtype)

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        """x @ W.T, plus `residual` inside the same GEMM call when given (one kernel, one pass over the output)."""
        if residual is None:
            return F.linear(x, self.weight)
        return torch.addmm(residual, x, self.weight.t())


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float, *, dtype: torch.dtype) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim, dtype=dtype))
        self.kernels: KernelSet | None = None  # set once by the model's kernel set

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [rows, dim]."""
        return self.kernels.rms_norm(x, self.weight, self.eps)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """The PyTorch RMSNorm every kernel is held to."""
    if x.dtype == torch.float32:
        return F.rms_norm(x, weight.shape, weight, eps)  # one fused kernel
    # Lower precision: normalise in float32, scale in the weight dtype, as the reference does.
    x32 = x.float()
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x32.to(x.dtype)


class RotaryEmbedding(nn.Module):
    """Rotate-half (GPT-NeoX / HF) rotary embedding with a cos/sin table precomputed for all positions.
    The runner looks positions up once per step; every layer reuses the gathered [num_tokens, head_dim] pair."""

    def __init__(self, head_dim: int, max_positions: int, theta: float) -> None:
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        freqs = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv_freq)  # [max_pos, head_dim/2]
        emb = torch.cat([freqs, freqs], dim=-1)  # [max_pos, head_dim]
        self.register_buffer("cos_table", emb.cos(), persistent=False)
        self.register_buffer("sin_table", emb.sin(), persistent=False)

    def lookup(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        # [num_tokens, 1, head_dim]: broadcasts over heads.
        return self.cos_table[positions].to(dtype).unsqueeze(1), self.sin_table[positions].to(dtype).unsqueeze(1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: [num_tokens, num_heads, head_dim]. x*cos + rotate_half(x)*sin."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


class SwiGLU(nn.Module):
    """down(silu(gate(x)) * up(x)) with gate and up fused into one matmul."""

    def __init__(self, hidden: int, intermediate: int, *, dtype: torch.dtype) -> None:
        super().__init__()
        self.intermediate = intermediate
        self.gate_up = Linear(hidden, 2 * intermediate, dtype=dtype)
        self.down = Linear(intermediate, hidden, dtype=dtype)
        self.kernels: KernelSet | None = None  # set once by the model's kernel set

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return self.down(self.kernels.silu_mul(self.gate_up(x)), residual)
