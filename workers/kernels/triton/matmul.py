"""What the three weight-only matmuls (gguf_matmul, int8_matmul, int4_matmul) share: y = x @ W^T (+ residual)
[M, N] in x's dtype, tiled [BLOCK_M, BLOCK_N] a program over grid (cdiv(M, BLOCK_M), cdiv(N, BLOCK_N)). Their
launchers' output checks, and the jit helpers their kernels inline: the program's tile of y, and the epilogue
that adds the residual and stores it."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from workers.kernels.triton.common import check


def matmul_output(x: torch.Tensor, n: int, residual: torch.Tensor | None,
                  out: torch.Tensor | None) -> torch.Tensor:
    """Checks residual and out against y's [M, N] in x's dtype; allocates out when not given (out may be
    residual, for an in-place residual add)."""
    shape = (x.shape[0], n)
    for t, name in ((residual, "residual"), (out, "out")):
        if t is not None:
            check(t, name, dtypes=(x.dtype,), dim=2, device=x.device)
            if tuple(t.shape) != shape:
                raise ValueError(f"{name} must have shape {shape}, got {tuple(t.shape)}")
    return torch.empty(shape, dtype=x.dtype, device=x.device) if out is None else out


def trivial_matmul(out: torch.Tensor, residual: torch.Tensor | None, k: int) -> bool:
    """Whether y needs no kernel: when it is empty, or when K = 0, which makes x @ W^T zeros and y the residual
    (or zeros), filled in here."""
    if out.numel() == 0:
        return True
    if k == 0:
        out.copy_(residual) if residual is not None else out.zero_()
        return True
    return False


@triton.jit
def output_tile(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """This program's rows [BLOCK_M] and columns [BLOCK_N] of y, and which of them are inside y."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    return offs_m, offs_n, offs_m < M, offs_n < N


@triton.jit
def store_output(acc, y_ptr, r_ptr, offs_m, offs_n, m_mask, n_mask, stride_ym, stride_rm,
                 HAS_RESIDUAL: tl.constexpr):
    """y's tile = acc [BLOCK_M, BLOCK_N] float32, plus the residual's tile (added in float32), in y's dtype.
    r_ptr may be y_ptr: each program reads its residual tile before it writes the same tile."""
    mask = m_mask[:, None] & n_mask[None, :]
    if HAS_RESIDUAL:
        acc += tl.load(r_ptr + offs_m[:, None] * stride_rm + offs_n[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], acc.to(y_ptr.dtype.element_ty), mask=mask)
