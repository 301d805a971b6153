"""y = x @ W^T (+ residual) with W int4 group-wise (W4A16): w[n, k] = scale[n, k // g] * q[n, k] + mins[n, k // g].

q is packed two weights a byte along K (byte j of a row: weight 2j in the low nibble, 2j + 1 in the high).
A K tile never straddles a group (BLOCK_K divides g), so within a tile scale and mins are one number per
output column and the tile's share of y is
    sum_k x[m, k] * (s[n] * q[n, k] + mn[n]) = s[n] * (x @ q^T)[m, n] + mn[n] * sum_k x[m, k]:
the dot runs on the raw nibbles (exact in any float dtype) and the group's scale and min are applied once per
output and tile. The nibbles need no interleaving: the low ones meet x's even columns, the high ones its odd."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from workers.kernels.triton.common import check, exact_dots, interpreted, next_power_of_2
from workers.kernels.triton.matmul import matmul_output, output_tile, store_output, trivial_matmul


@triton.jit
def _int4_matmul_kernel(x_ptr, q_ptr, s_ptr, mn_ptr, r_ptr, y_ptr, M, N, K,
                        stride_xm, stride_qn, stride_sn, stride_mn, stride_rm, stride_ym,
                        GROUP_SIZE: tl.constexpr, HAS_RESIDUAL: tl.constexpr, F32_DOT: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    HALF: tl.constexpr = BLOCK_K // 2  # bytes of a row per tile
    offs_m, offs_n, m_mask, n_mask = output_tile(M, N, BLOCK_M, BLOCK_N)
    offs_b = tl.arange(0, HALF)
    x_rows = x_ptr + offs_m[:, None] * stride_xm  # [BLOCK_M, 1]
    rows = offs_n.to(tl.int64)
    q_rows = q_ptr + rows[None, :] * stride_qn  # [1, BLOCK_N]
    x_mask = m_mask[:, None]
    q_mask = n_mask[None, :]

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):  # K is whole groups, so whole tiles: no K mask
        byte = k0 // 2 + offs_b
        x_even = tl.load(x_rows + (2 * byte)[None, :], mask=x_mask, other=0.0)  # [BLOCK_M, HALF]
        x_odd = tl.load(x_rows + (2 * byte + 1)[None, :], mask=x_mask, other=0.0)
        packed = tl.load(q_rows + byte[:, None], mask=q_mask, other=0)  # [HALF, BLOCK_N]
        if F32_DOT:  # exact float32 products, not the GPU's TF32 default
            xq = tl.dot(x_even.to(tl.float32), (packed & 0xF).to(tl.float32), input_precision="ieee")
            xq = tl.dot(x_odd.to(tl.float32), (packed >> 4).to(tl.float32), xq, input_precision="ieee")
        else:
            xq = tl.dot(x_even, (packed & 0xF).to(x_even.dtype))
            xq = tl.dot(x_odd, (packed >> 4).to(x_odd.dtype), xq)
        x_sum = tl.sum(x_even.to(tl.float32), axis=1) + tl.sum(x_odd.to(tl.float32), axis=1)  # [BLOCK_M]
        group = k0 // GROUP_SIZE
        s = tl.load(s_ptr + rows * stride_sn + group, mask=n_mask, other=0.0)  # [BLOCK_N]
        mn = tl.load(mn_ptr + rows * stride_mn + group, mask=n_mask, other=0.0)
        acc += xq * s[None, :] + x_sum[:, None] * mn[None, :]

    store_output(acc, y_ptr, r_ptr, offs_m, offs_n, m_mask, n_mask, stride_ym, stride_rm, HAS_RESIDUAL)


def _tiles(x: torch.Tensor, m: int, n: int, group_size: int) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages); BLOCK_K is the largest power of two dividing the
    group, capped, so a tile holds one group's columns."""
    one_group = group_size & -group_size
    if interpreted(x):  # few, large programs: the interpreter pays per program and per op, not per element
        return (min(max(16, next_power_of_2(m)), 64), min(max(16, next_power_of_2(n)), 256),
                min(256, one_group), 1, 1)
    if m <= 64:  # decode: streaming the weight is the cost; enough programs in flight to keep HBM busy
        block_n = 64 if triton.cdiv(n, 64) >= 128 else 32
        return max(16, next_power_of_2(m)), block_n, min(128, one_group), 4, 4
    return 64, 128, min(64, one_group), 4, 3


def int4_matmul(x: torch.Tensor, q: torch.Tensor, scale: torch.Tensor, mins: torch.Tensor, group_size: int = 128,
                residual: torch.Tensor | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    """x [M, K] (float32/16, bfloat16; last dim dense) times W^T, W = scale * q + mins group-wise, with q uint8
    [N, K / 2] (two weights a byte; last dim dense), scale and mins float32 [N, K / group_size] (last dim
    dense); group_size a multiple of 32 dividing K; y [M, N] in x's dtype."""
    check(x, "x", dim=2)
    check(q, "q", dtypes=(torch.uint8,), dim=2, device=x.device)
    check(scale, "scale", dtypes=(torch.float32,), dim=2, device=x.device)
    check(mins, "mins", dtypes=(torch.float32,), dim=2, device=x.device)
    m, k = x.shape
    n = q.shape[0]
    if group_size <= 0 or group_size % 32:
        raise ValueError(f"group_size must be a positive multiple of 32, got {group_size}")
    if k % group_size:
        raise ValueError(f"x has {k} columns, not whole groups of {group_size}")
    if q.shape[1] * 2 != k:
        raise ValueError(f"q has {q.shape[1]} bytes a row, {k} weights need {k // 2}")
    for t, name in ((scale, "scale"), (mins, "mins")):
        if tuple(t.shape) != (n, k // group_size):
            raise ValueError(f"{name} must have shape {(n, k // group_size)}, got {tuple(t.shape)}")
    out = matmul_output(x, n, residual, out)
    if trivial_matmul(out, residual, k):
        return out
    block_m, block_n, block_k, warps, stages = _tiles(x, m, n, group_size)
    grid = (triton.cdiv(m, block_m), triton.cdiv(n, block_n))
    _int4_matmul_kernel[grid](
        x, q, scale, mins, residual if residual is not None else out, out, m, n, k,
        x.stride(0), q.stride(0), scale.stride(0), mins.stride(0),
        residual.stride(0) if residual is not None else 0, out.stride(0),
        GROUP_SIZE=group_size, HAS_RESIDUAL=residual is not None, F32_DOT=exact_dots(x),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps, num_stages=stages)
    return out
