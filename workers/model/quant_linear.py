"""Runtime swap of Linear layers for ones that multiply by GGUF-blocked weights (workers.model.block_quant),
the same two-step shape as packed_linear: the model is built and loaded as usual, then `convert_for_runtime`
replaces each named Linear by a BlockQuantLinear and drops its dense weight."""
from __future__ import annotations

import torch
from torch import nn

from workers.kernels.cpu import CpuKernels
from workers.model.block_quant import PackedWeight


class BlockQuantLinear(nn.Module):
    def __init__(self, weight: PackedWeight, kernels: CpuKernels) -> None:
        super().__init__()
        self.in_features = weight.in_features
        self.out_features = weight.out_features
        self.bits = weight.bits
        self.register_buffer("q", weight.q, persistent=False)
        self.register_buffer("dm", weight.dm, persistent=False)
        kernels.block_quant_linear(torch.zeros(1, self.in_features), weight.q, weight.dm, weight.bits)  # checks layout
        # Required (unlike the layers cpu.attach toggles, this one has no PyTorch path); unchecked, as the layout
        # was just checked and the model shapes x by construction.
        self.ops = kernels.unchecked()

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return self.ops.block_quant_linear(x, self.q, self.dm, self.bits, residual)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bits={self.bits}"


def convert_for_runtime(model: nn.Module, weights: dict[str, PackedWeight], kernels: CpuKernels) -> int:
    """Replace model.<path> by a BlockQuantLinear for every path in `weights`; returns how many."""
    for path, weight in weights.items():
        parent_path, _, name = path.rpartition(".")
        parent = model.get_submodule(parent_path) if parent_path else model
        old = getattr(parent, name)
        if (old.out_features, old.in_features) != (weight.out_features, weight.in_features):
            raise ValueError(f"{path}: packed weight [{weight.out_features}, {weight.in_features}] does not "
                             f"fit [{old.out_features}, {old.in_features}]")
        setattr(parent, name, BlockQuantLinear(weight, kernels))
    return len(weights)
