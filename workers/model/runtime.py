"""From a loaded model to the one a kernel set runs (gpt-fast's two steps): choose each linear's weight form
(dense, GGUF blocks as stored, or int8 / int4 quantized now), swap every Linear for the kernel set's module
for that form, move everything to the device, point the layers at the kernel set."""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import torch
from torch import nn

from workers.model.kernel_sets.base import KernelSet
from workers.model.kernel_sets.registry import attach
from workers.model.layers import Linear
from workers.model.quantize import quantize_gguf_q8_0, quantize_int4, quantize_int8

INT4_GROUPS = (128, 64, 32)

M = TypeVar("M", bound=nn.Module)


def quantize_int4_groupwise(w: torch.Tensor) -> object:
    """W4A16 in groups of 128 inputs, or the largest of 64 and 32 that divides a row (SmolLM2's 576-wide
    hidden size takes 64: 576 = 4.5 x 128)."""
    group = next((g for g in INT4_GROUPS if w.shape[1] % g == 0), None)
    if group is None:
        raise ValueError(f"in_features {w.shape[1]} is not a multiple of 32: no int4 group fits")
    return quantize_int4(w, group_size=group)


# quantization name -> weight-only quantizer of one dense [out, in] weight.
QUANTIZERS: dict[str, Callable[[torch.Tensor], object]] = {
    "int8": quantize_int8,  # W8A16, per output channel
    "int4": quantize_int4_groupwise,  # W4A16, groups of 128 (or 64, 32) with scale and minimum
    "q8_0": quantize_gguf_q8_0,  # GGUF's Q8_0 blocks (32 weights, one fp16 scale), written at load
}
# Left dense when quantizing at load time, as weight-only schemes usually do: the output head is where
# rounding shows most in the logits, and it is tied to the embedding in small models.
KEEP_DENSE = ("lm_head",)


def linear_weights(model: nn.Module, quantization: str | None, gguf: dict[str, object]) -> dict[str, object]:
    """Module path -> the form its weight runs in; linears not named keep their dense weight."""
    if quantization is None:
        return dict(gguf)
    if quantization not in QUANTIZERS:
        raise ValueError(f"quantization must be one of {sorted(QUANTIZERS)} or None, got {quantization!r}")
    quantize = QUANTIZERS[quantization]
    return {path: quantize(m.weight.detach().float()) for path, m in model.named_modules()
            if isinstance(m, Linear) and path not in KEEP_DENSE}


def to_runtime(model: M, weights: dict[str, object], kernels: KernelSet) -> M:
    """Swap every Linear for `kernels.linear(its weight form)`, move the model to the kernel set's device and
    attach the set. In place; returns the model."""
    for path, module in [(p, m) for p, m in model.named_modules() if isinstance(m, Linear)]:
        parent_path, _, name = path.rpartition(".")
        parent = model.get_submodule(parent_path) if parent_path else model
        replacement = kernels.linear(weights.get(path, module.weight.detach()), module)
        if (replacement.out_features, replacement.in_features) != (module.out_features, module.in_features):
            raise ValueError(f"{path}: a [{replacement.out_features}, {replacement.in_features}] weight does not "
                             f"fit [{module.out_features}, {module.in_features}]")
        setattr(parent, name, replacement)
    model.to(kernels.device)
    attach(model, kernels)
    kernels.finalize(model)
    return model
