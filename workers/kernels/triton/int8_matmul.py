"""y = x @ W^T (+ residual) with W int8 per output channel (W8A16): w[n, k] = scale[n] * q[n, k].

The scale is constant along K, so the K loop multiplies x by the raw q (exact in any float dtype) and each
output column is scaled once, in the epilogue: one multiply per output, none per weight."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from workers.kernels.triton.common import check, exact_dots, interpreted, next_power_of_2
from workers.kernels.triton.matmul import matmul_output, output_tile, store_output, trivial_matmul


@triton.jit
def _int8_matmul_kernel(x_ptr, q_ptr, s_ptr, r_ptr, y_ptr, M, N, K,
                        stride_xm, stride_qn, stride_rm, stride_ym,
                        HAS_RESIDUAL: tl.constexpr, F32_DOT: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m, offs_n, m_mask, n_mask = output_tile(M, N, BLOCK_M, BLOCK_N)
    x_rows = x_ptr + offs_m[:, None] * stride_xm  # [BLOCK_M, 1]
    q_rows = q_ptr + offs_n.to(tl.int64)[None, :] * stride_qn  # [1, BLOCK_N]

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        k_mask = offs_k < K
        x = tl.load(x_rows + offs_k[None, :], mask=m_mask[:, None] & k_mask[None, :], other=0.0)
        q = tl.load(q_rows + offs_k[:, None], mask=k_mask[:, None] & n_mask[None, :], other=0)  # [BLOCK_K, BLOCK_N]
        if F32_DOT:  # exact float32 products, not the GPU's TF32 default
            acc = tl.dot(x.to(tl.float32), q.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(x, q.to(x.dtype), acc)

    acc *= tl.load(s_ptr + offs_n, mask=n_mask, other=0.0)[None, :]
    store_output(acc, y_ptr, r_ptr, offs_m, offs_n, m_mask, n_mask, stride_ym, stride_rm, HAS_RESIDUAL)


def _tiles(x: torch.Tensor, m: int, n: int, k: int) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)."""
    if interpreted(x):  # few, large programs: the interpreter pays per program and per op, not per element
        return (min(max(16, next_power_of_2(m)), 64), min(max(16, next_power_of_2(n)), 256),
                min(256, max(16, next_power_of_2(k))), 1, 1)
    if m <= 64:  # decode: streaming the weight is the cost; enough programs in flight to keep HBM busy
        block_n = 64 if triton.cdiv(n, 64) >= 128 else 32
        return max(16, next_power_of_2(m)), block_n, 128, 4, 4
    return 64, 128, 64, 4, 3


def int8_matmul(x: torch.Tensor, q: torch.Tensor, scale: torch.Tensor, residual: torch.Tensor | None = None,
                out: torch.Tensor | None = None) -> torch.Tensor:
    """x [M, K] (float32/16, bfloat16; last dim dense) times W^T, W = scale[:, None] * q with q int8 [N, K]
    (last dim dense) and scale float32 [N] (contiguous); y [M, N] in x's dtype."""
    check(x, "x", dim=2)
    check(q, "q", dtypes=(torch.int8,), dim=2, device=x.device)
    check(scale, "scale", dtypes=(torch.float32,), dim=1, device=x.device, contiguous=True)
    m, k = x.shape
    n = q.shape[0]
    if q.shape[1] != k:
        raise ValueError(f"q has {q.shape[1]} columns, x has {k}")
    if scale.shape[0] != n:
        raise ValueError(f"scale has {scale.shape[0]} entries for {n} rows of q")
    out = matmul_output(x, n, residual, out)
    if trivial_matmul(out, residual, k):
        return out
    block_m, block_n, block_k, warps, stages = _tiles(x, m, n, k)
    grid = (triton.cdiv(m, block_m), triton.cdiv(n, block_n))
    _int8_matmul_kernel[grid](
        x, q, scale, residual if residual is not None else out, out, m, n, k,
        x.stride(0), q.stride(0), residual.stride(0) if residual is not None else 0, out.stride(0),
        HAS_RESIDUAL=residual is not None, F32_DOT=exact_dots(x),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps, num_stages=stages)
    return out
