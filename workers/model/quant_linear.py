"""A linear that multiplies by block-quantized weights (workers.model.block_quant) through the CPU kernel: GGUF
blocks, or int8 / int4 weights quantized at load time. The CPU kernel set builds one per such linear."""
from __future__ import annotations

import torch
from torch import nn

from workers.kernels.cpu import CpuKernels
from workers.model.block_quant import PackedWeight


class BlockQuantLinear(nn.Module):
    def __init__(self, weight: PackedWeight, kernels: CpuKernels, *, int8_activations: bool = False) -> None:
        super().__init__()
        self.in_features = weight.in_features
        self.out_features = weight.out_features
        self.bits = weight.bits
        self.int8_activations = int8_activations  # x rounded to int8 per 32 columns (workers/kernels/cpu_qlinear.c)
        self.register_buffer("q", weight.q, persistent=False)
        self.register_buffer("dm", weight.dm, persistent=False)
        kernels.block_quant_linear(torch.zeros(1, self.in_features), weight.q, weight.dm, weight.bits)  # checks layout
        # Required (unlike the layers cpu.attach toggles, this one has no PyTorch path); unchecked, as the layout
        # was just checked and the model shapes x by construction.
        self.ops = kernels.unchecked()

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return self.ops.block_quant_linear(x, self.q, self.dm, self.bits, residual,
                                           int8_activations=self.int8_activations)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, bits={self.bits}"
                + (", int8 activations" if self.int8_activations else ""))
