"""Which kernel set an engine runs, chosen once from its device and EngineConfig.kernels."""
from __future__ import annotations

import logging
from collections.abc import Callable

import torch

from workers.model.kernel_sets.base import KernelSet
from workers.model.kernel_sets.torch_set import TorchKernels

log = logging.getLogger(__name__)


def _torch(device: torch.device, dtype: str, **_) -> KernelSet:
    return TorchKernels(device)


def _cpu(device: torch.device, dtype: str, *, blocked_weights: bool = True, decoder_stack: bool = True,
         int8_activations: bool = False) -> KernelSet:
    from workers.kernels import cpu
    from workers.model.kernel_sets.cpu_set import CpuKernelSet

    if device.type != "cpu":
        raise ValueError(f"kernels='cpu' runs on the CPU, not on {device}")
    if dtype != "float32":
        raise ValueError(f"kernels='cpu' computes in float32; dtype {dtype!r} needs kernels='torch'")
    kernels = cpu.load()
    if kernels is None:  # no C compiler, or switched off: the same model on PyTorch ops
        log.warning("the CPU kernels are unavailable; running PyTorch ops")
        return TorchKernels(device)
    if int8_activations and not kernels.int8_activations:
        log.warning("int8 activations need AVX-512 VNNI and VBMI, which this CPU lacks; running float32")
        int8_activations = False
    return CpuKernelSet(kernels, blocked_weights=blocked_weights, decoder_stack=decoder_stack,
                        int8_activations=int8_activations)


def _triton(device: torch.device, dtype: str, **_) -> KernelSet:
    from workers.kernels.triton.common import interpreter_enabled

    if device.type == "cpu" and not interpreter_enabled():
        raise ValueError("kernels='triton' on the CPU runs only under Triton's interpreter: "
                         "set TRITON_INTERPRET=1 before starting (slow; for tests)")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"kernels='triton' needs a CUDA device, got {device}")
    from workers.model.kernel_sets.triton_set import TritonKernelSet

    return TritonKernelSet(device)


KERNEL_SETS: dict[str, Callable[..., KernelSet]] = {"torch": _torch, "cpu": _cpu, "triton": _triton}


def resolve(kernels: str, device: torch.device, dtype: str) -> str:
    """'auto' -> Triton on CUDA, the C kernels for float32 on the CPU, PyTorch where neither applies."""
    if kernels != "auto":
        return kernels
    if device.type == "cuda":
        return "triton"
    return "cpu" if device.type == "cpu" and dtype == "float32" else "torch"


def select(kernels: str, device: torch.device | str, dtype: str, **options) -> KernelSet:
    device = torch.device(device)
    name = resolve(kernels, device, dtype)
    if name not in KERNEL_SETS:
        raise ValueError(f"kernels must be one of {['auto', *KERNEL_SETS]}, got {kernels!r}")
    return KERNEL_SETS[name](device, dtype, **options)


def attach(model: torch.nn.Module, kernels: KernelSet) -> int:
    """Point the model and every layer with a kernel path (a `kernels` attribute) at `kernels`."""
    layers = [m for m in model.modules() if hasattr(m, "kernels")]
    for m in layers:
        m.kernels = kernels
    return len(layers)
