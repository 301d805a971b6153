"""SwiGLU's activation: silu(gate) * up from the fused gate|up projection."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from workers.kernels.triton.common import check, interpreted, next_power_of_2

_BLOCK = 1024  # columns per program on the GPU
_INTERPRETER_TILE = 1 << 16  # elements per program under the interpreter


@triton.jit
def _silu_mul_kernel(gate_up_ptr, out_ptr, rows, inter, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]
    col = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)[None, :]
    mask = (row < rows) & (col < inter)
    row = row.to(tl.int64)
    src = gate_up_ptr + row * (2 * inter) + col  # [rows, 2 * inter]: gate, then up
    gate = tl.load(src, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(src + inter, mask=mask, other=0.0).to(tl.float32)
    # sigmoid from exp(-|gate|) <= 1: no overflow to inf for any gate, so silu stays finite (0 * inf is NaN).
    e = tl.exp(-tl.abs(gate))
    sigmoid = tl.where(gate >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    tl.store(out_ptr + row * inter + col, (gate * sigmoid * up).to(out_ptr.dtype.element_ty), mask=mask)


def silu_mul(gate_up: torch.Tensor) -> torch.Tensor:
    """gate_up [rows, 2 * inter] (contiguous) -> silu(gate) * up, a new [rows, inter] tensor in gate_up's
    dtype, computed in float32."""
    check(gate_up, "gate_up", dim=2, contiguous=True)
    rows, width = gate_up.shape
    if width % 2:
        raise ValueError(f"gate_up width {width} is odd")
    inter = width // 2
    out = torch.empty((rows, inter), dtype=gate_up.dtype, device=gate_up.device)
    if out.numel() == 0:
        return out
    if interpreted(gate_up):
        block = next_power_of_2(inter)
        rows_per_program = min(next_power_of_2(rows), max(1, _INTERPRETER_TILE // block))
    else:
        block, rows_per_program = min(_BLOCK, next_power_of_2(inter)), 1
    grid = (triton.cdiv(rows, rows_per_program), triton.cdiv(inter, block))
    _silu_mul_kernel[grid](gate_up, out, rows, inter, ROWS=rows_per_program, BLOCK=block, num_warps=4)
    return out
