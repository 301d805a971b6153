"""What every Triton launcher shares: argument checks that never synchronise with the device, index-range
checks that do (run once per engine step, not per layer), tile choices for the interpreter, and the rule for
when dots run in exact float32."""
from __future__ import annotations

import torch

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
INDEX_DTYPES = (torch.int32, torch.int64)


def interpreted(t: torch.Tensor) -> bool:
    """CPU tensors can only reach a Triton kernel through the interpreter: there, fewer and larger programs
    are far faster (each program is a Python loop over numpy ops), so launchers size tiles for it."""
    return t.device.type == "cpu"


def exact_dots(t: torch.Tensor) -> bool:
    """Whether a kernel's dots on t's dtype run on float32 tiles in IEEE precision: float32 always (a GPU would
    use TF32 by default), and bfloat16 under the interpreter, whose tl.dot multiplies bfloat16 tiles as their
    raw 16-bit patterns (triton 3.6 and 3.9); the products are the same as the GPU's bfloat16 ones."""
    return t.dtype == torch.float32 or (t.dtype == torch.bfloat16 and interpreted(t))


def check(t: torch.Tensor, name: str, *, dtypes: tuple[torch.dtype, ...] = FLOAT_DTYPES, dim: int | None = None,
          device: torch.device | None = None, contiguous: bool = False, last_dense: bool = True) -> None:
    """Dtype, rank, device and layout of one argument; raises ValueError naming it. Never syncs."""
    if t.dtype not in dtypes:
        raise ValueError(f"{name} must be one of {[str(d) for d in dtypes]}, got {t.dtype}")
    if dim is not None and t.dim() != dim:
        raise ValueError(f"{name} must have {dim} dimensions, got shape {tuple(t.shape)}")
    if device is not None and t.device != device:
        raise ValueError(f"{name} is on {t.device}, expected {device}")
    if contiguous and not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous")
    if last_dense and t.dim() and t.stride(-1) != 1 and t.shape[-1] > 1:
        raise ValueError(f"{name} must be contiguous in its last dimension")


def check_index_range(t: torch.Tensor, name: str, low: int, high: int) -> None:
    """Every element of an index tensor in [low, high). Syncs with the device: once a step, never per layer."""
    if t.numel():
        lo, hi = t.aminmax()
        if int(lo) < low or int(hi) >= high:
            raise ValueError(f"{name} out of range [{low}, {high})")


def next_power_of_2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def interpreter_enabled() -> bool:
    """Whether triton.jit runs kernels in its interpreter (TRITON_INTERPRET=1 when triton was imported)."""
    import triton

    knobs = getattr(triton, "knobs", None)
    if knobs is not None and hasattr(knobs, "runtime"):
        return bool(knobs.runtime.interpret)
    import os

    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")
