"""RMSNorm over the rows of x, optionally fused with the residual add that precedes it in a pre-norm block."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from workers.kernels.triton.common import check, interpreted, next_power_of_2

_INTERPRETER_TILE = 1 << 15  # elements per program under the interpreter: one numpy op per tile, not per row


@triton.jit
def _rms_norm_kernel(x_ptr, x_stride, res_ptr, res_stride, w_ptr, out_ptr, h_ptr, rows, dim, eps,
                     HAS_RESIDUAL: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    # A [ROWS, BLOCK] tile: whole rows (BLOCK >= dim), so each row's mean square is one reduction.
    row = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]
    col = tl.arange(0, BLOCK)[None, :]
    in_row = col < dim
    mask = (row < rows) & in_row
    row = row.to(tl.int64)
    x = tl.load(x_ptr + row * x_stride + col, mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        x += tl.load(res_ptr + row * res_stride + col, mask=mask, other=0.0).to(tl.float32)
        h = x.to(h_ptr.dtype.element_ty)
        tl.store(h_ptr + row * dim + col, h, mask=mask)
        x = h.to(tl.float32)  # normalise the h we hand back, as the unfused add-then-norm would
    inv = tl.rsqrt(tl.sum(x * x, axis=1) / dim + eps)
    # Round the normalised row to x's dtype before the weight, as layers.RMSNorm does (a no-op in float32).
    y = (x * inv[:, None]).to(out_ptr.dtype.element_ty).to(tl.float32)
    w = tl.load(w_ptr + col, mask=in_row, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * dim + col, (y * w).to(out_ptr.dtype.element_ty), mask=mask)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float,
             residual: torch.Tensor | None = None) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """x [rows, dim] (rows may be strided), weight [dim] -> x * rsqrt(mean(x^2) + eps) * weight, dense
    [rows, dim] in x's dtype, computed in float32.

    With residual [rows, dim] (rows may be strided): h = x + residual (added in float32, stored in x's dtype)
    and returns (rms_norm(h), h), both new dense tensors; neither input is written."""
    check(x, "x", dim=2)
    check(weight, "weight", dim=1, device=x.device)
    rows, dim = x.shape
    if weight.shape[0] != dim:
        raise ValueError(f"weight has {weight.shape[0]} elements for rows of {dim}")
    out = torch.empty((rows, dim), dtype=x.dtype, device=x.device)
    h = res = out  # placeholders: the kernel never touches them without a residual
    if residual is not None:
        check(residual, "residual", dtypes=(x.dtype,), dim=2, device=x.device)
        if residual.shape != x.shape:
            raise ValueError(f"residual has shape {tuple(residual.shape)}, expected {tuple(x.shape)}")
        res, h = residual, torch.empty_like(out)
    if rows == 0 or dim == 0:
        return out if residual is None else (out, h)
    block = next_power_of_2(dim)
    rows_per_program = min(next_power_of_2(rows), max(1, _INTERPRETER_TILE // block)) if interpreted(x) else 1
    grid = (triton.cdiv(rows, rows_per_program),)
    _rms_norm_kernel[grid](x, x.stride(0), res, res.stride(0), weight, out, h, rows, dim, eps,
                           HAS_RESIDUAL=residual is not None, ROWS=rows_per_program, BLOCK=block,
                           num_warps=max(1, min(16, block // 256)))
    return out if residual is None else (out, h)
