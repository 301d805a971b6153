"""Linear modules whose weights stay in their storage format and are dequantized in registers by Triton matmul
kernels: GGUF blocks as the file stores them, int8 rows with per-channel scales (W8A16), int4 groups with
scales and minimums (W4A16). Built by the Triton kernel set, one per linear, at load time."""
from __future__ import annotations

import torch
from torch import nn

from workers.kernels.triton.gguf_matmul import gguf_matmul
from workers.kernels.triton.int4_matmul import int4_matmul
from workers.kernels.triton.int8_matmul import int8_matmul
from workers.model.gguf_weight import GGUFWeight
from workers.model.quantize import Int4Weight, Int8Weight


class GGUFLinear(nn.Module):
    """y = x @ W.T (+ residual) with W in GGUF blocks; a fused weight with parts of different types runs one
    matmul per part (the shipped models have one type per linear, so one call)."""

    def __init__(self, weight: GGUFWeight) -> None:
        super().__init__()
        self.out_features, self.in_features = weight.shape
        self.qtypes = [p.qtype for p in weight.parts]
        self.splits = [p.rows for p in weight.parts]
        for i, p in enumerate(weight.parts):
            self.register_buffer(f"raw{i}", torch.from_numpy(p.data.copy()), persistent=False)  # [rows, row_bytes]

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        if len(self.qtypes) == 1:
            return gguf_matmul(x, self.raw0, self.qtypes[0], residual)
        outs = [gguf_matmul(x, getattr(self, f"raw{i}"), q) for i, q in enumerate(self.qtypes)]
        out = torch.cat(outs, dim=1)
        return out if residual is None else out.add_(residual)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, gguf={'+'.join(self.qtypes)}"


class Int8Linear(nn.Module):
    """W8A16: int8 weight rows, one float32 scale per output channel."""

    def __init__(self, weight: Int8Weight) -> None:
        super().__init__()
        self.out_features, self.in_features = weight.q.shape
        self.register_buffer("q", weight.q.contiguous(), persistent=False)          # [N, K] int8
        self.register_buffer("scale", weight.scale.contiguous(), persistent=False)  # [N] float32

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return int8_matmul(x, self.q, self.scale, residual)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8 per channel"


class Int4Linear(nn.Module):
    """W4A16: two 4-bit weights a byte, a float32 scale and minimum per group of `group_size` inputs."""

    def __init__(self, weight: Int4Weight) -> None:
        super().__init__()
        self.out_features, self.in_features = weight.q.shape[0], weight.q.shape[1] * 2
        self.group_size = weight.group_size
        self.register_buffer("q", weight.q.contiguous(), persistent=False)          # [N, K / 2] uint8
        self.register_buffer("scale", weight.scale.contiguous(), persistent=False)  # [N, K / g] float32
        self.register_buffer("mins", weight.mins.contiguous(), persistent=False)    # [N, K / g] float32

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return int4_matmul(x, self.q, self.scale, self.mins, self.group_size, residual)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int4 g={self.group_size}"
