"""A dense float32 linear whose weight oneDNN reorders once, at load, into its blocked layout; the CPU kernel set
swaps it in for every dense Linear (workers.model.runtime).

Plain F.linear re-packs the weight matrix on every call; for decode-sized batches (a few to a few dozen
rows) on a CPU that packing, not the arithmetic, is most of the time. The weights themselves stay float32."""
from __future__ import annotations

import torch
from torch import nn


class PackedLinear(nn.Module):
    def __init__(self, linear: nn.Module) -> None:
        super().__init__()
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        # The blocked layout inductor's CPU backend uses; the op reads and writes plain dense tensors, so no
        # to_mkldnn / to_dense conversion per call (that was ~8% of a decode step), and the residual add
        # runs as oneDNN's fused post-op.
        self.register_buffer("packed_weight", torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach()),
                             persistent=False)

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        x = x.contiguous()
        if residual is None:
            return torch.ops.mkldnn._linear_pointwise(x, self.packed_weight, None, "none", [], "")
        return torch.ops.mkldnn._linear_pointwise.binary(x, residual.contiguous(), self.packed_weight, None, "add")


def can_pack_dense(weight: torch.Tensor) -> bool:
    """oneDNN present, and a float32 CPU weight (the dtype whose results the reference tests pin down)."""
    return torch.backends.mkldnn.is_available() and weight.dtype == torch.float32 and weight.device.type == "cpu"
