"""y = x @ W^T (+ residual) with W read straight from its GGUF blocks (Q8_0, Q4_0, Q4_1): no dense copy.

Each block is 32 weights of one row, w = d * q + m (workers.model.block_quant): the kernel loads each block's
fp16 d (and Q4_1's m) once, through an fp16 pointer (every format's block size is even, so they are 2-byte
aligned), unpacks the tile's q bytes and multiplies in registers.
A 4-bit block's byte j holds weight j (low nibble) and weight j + 16 (high nibble), so the K tile is split
in two halves, each a tl.dot: the low halves of its blocks against x's columns g*32 + j, the high halves
against g*32 + 16 + j. The sum over K is the same; no nibble has to move. Q8_0 uses the same split."""
from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from workers.kernels.triton.common import check, exact_dots, interpreted, next_power_of_2
from workers.kernels.triton.matmul import matmul_output, output_tile, store_output, trivial_matmul

GROUP = 32


@dataclass(frozen=True, slots=True)
class _Format:
    block_bytes: int
    bits: int
    has_min: bool


FORMATS = {
    "Q8_0": _Format(34, 8, False),  # fp16 d, 32 x int8 q
    "Q4_0": _Format(18, 4, False),  # fp16 d, 16 bytes of nibbles; w = d * (q - 8)
    "Q4_1": _Format(20, 4, True),   # fp16 d, fp16 m, 16 bytes of nibbles; w = d * q + m
}


@triton.jit
def _block_halves(block_starts, mask, HALF: tl.constexpr, BLOCK_N: tl.constexpr):
    """The fp16 at each block's start (2-byte aligned: every format's blocks have an even size), as float32,
    loaded once per block [HALF // 16, BLOCK_N] and spread over the block's 16 weights of a half tile."""
    G: tl.constexpr = HALF // 16
    v = tl.load(block_starts.to(tl.pointer_type(tl.float16)), mask=mask, other=0.0).to(tl.float32)
    return tl.reshape(tl.broadcast_to(v[:, None, :], (G, 16, BLOCK_N)), (HALF, BLOCK_N))


@triton.jit
def _gguf_matmul_kernel(x_ptr, w_ptr, r_ptr, y_ptr, M, N, K,
                        stride_xm, stride_wn, stride_rm, stride_ym,
                        BLOCK_BYTES: tl.constexpr, BITS: tl.constexpr, HAS_MIN: tl.constexpr,
                        HAS_RESIDUAL: tl.constexpr, F32_DOT: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    HALF: tl.constexpr = BLOCK_K // 2
    offs_m, offs_n, m_mask, n_mask = output_tile(M, N, BLOCK_M, BLOCK_N)
    offs_t = tl.arange(0, HALF)  # position in the tile's half: block t // 16, weight t % 16 of that half
    t_block = offs_t // 16
    t_weight = offs_t % 16
    offs_g = tl.arange(0, HALF // 16)  # the tile's blocks
    x_rows = x_ptr + offs_m[:, None] * stride_xm  # [BLOCK_M, 1]
    w_rows = w_ptr + offs_n.to(tl.int64)[None, :] * stride_wn  # [1, BLOCK_N]
    num_blocks = K // 32

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        blk = k0 // 32 + t_block  # [HALF] block index along the row
        k_mask = blk < num_blocks
        col = blk * 32 + t_weight  # x column of each low-half weight; the high half is 16 further
        x_mask = m_mask[:, None] & k_mask[None, :]
        x_lo = tl.load(x_rows + col[None, :], mask=x_mask, other=0.0)  # [BLOCK_M, HALF]
        x_hi = tl.load(x_rows + (col + 16)[None, :], mask=x_mask, other=0.0)

        block = w_rows + (blk * BLOCK_BYTES)[:, None]  # [HALF, BLOCK_N]: each weight's block start
        w_mask = k_mask[:, None] & n_mask[None, :]
        gblk = k0 // 32 + offs_g
        starts = w_rows + (gblk * BLOCK_BYTES)[:, None]  # [HALF // 16, BLOCK_N]: one per block
        g_mask = (gblk < num_blocks)[:, None] & n_mask[None, :]
        d = _block_halves(starts, g_mask, HALF, BLOCK_N)
        if BITS == 8:
            q_lo = tl.load(block + 2 + t_weight[:, None], mask=w_mask, other=0).to(tl.int8, bitcast=True)
            q_hi = tl.load(block + 18 + t_weight[:, None], mask=w_mask, other=0).to(tl.int8, bitcast=True)
            w_lo = d * q_lo.to(tl.float32)
            w_hi = d * q_hi.to(tl.float32)
        else:
            if HAS_MIN:
                m = _block_halves(starts + 2, g_mask, HALF, BLOCK_N)
                packed = tl.load(block + 4 + t_weight[:, None], mask=w_mask, other=0)
            else:
                m = -8.0 * d
                packed = tl.load(block + 2 + t_weight[:, None], mask=w_mask, other=0)
            w_lo = d * (packed & 0xF).to(tl.float32) + m
            w_hi = d * (packed >> 4).to(tl.float32) + m

        if F32_DOT:  # exact float32 products, not the GPU's TF32 default; w rounded to x's dtype first
            acc = tl.dot(x_lo.to(tl.float32), w_lo.to(x_lo.dtype).to(tl.float32), acc, input_precision="ieee")
            acc = tl.dot(x_hi.to(tl.float32), w_hi.to(x_hi.dtype).to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(x_lo, w_lo.to(x_lo.dtype), acc)
            acc = tl.dot(x_hi, w_hi.to(x_hi.dtype), acc)

    store_output(acc, y_ptr, r_ptr, offs_m, offs_n, m_mask, n_mask, stride_ym, stride_rm, HAS_RESIDUAL)


def _tiles(x: torch.Tensor, m: int, n: int, k: int) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages). BLOCK_K is a multiple of 32 (whole blocks)."""
    if interpreted(x):  # few, wide programs: the interpreter pays per program and per op; past ~4096 columns
        # a tile, per-element numpy work dominates (SmolLM2's 49152-row head: 10.3 s at 256, 3.6 s at 4096)
        return (min(max(16, next_power_of_2(m)), 64), min(max(16, next_power_of_2(n)), 4096),
                min(256, max(32, next_power_of_2(k))), 1, 1)
    if m <= 64:  # decode: streaming the weight is the cost; enough programs in flight to keep HBM busy
        block_n = 64 if triton.cdiv(n, 64) >= 128 else 32
        return max(16, next_power_of_2(m)), block_n, 128, 4, 3
    return 64, 128, 64, 4, 3


def gguf_matmul(x: torch.Tensor, raw: torch.Tensor, qtype: str, residual: torch.Tensor | None = None,
                out: torch.Tensor | None = None) -> torch.Tensor:
    """x [M, K] (float32/16, bfloat16; last dim dense) times the GGUF weight [N, K] whose blocks `raw` holds
    (uint8 [N, K / 32 * block bytes], one row's blocks per row, last dim dense); y [M, N] in x's dtype."""
    fmt = FORMATS.get(getattr(qtype, "name", qtype))  # a gguf GGMLQuantizationType works too
    if fmt is None:
        raise ValueError(f"GGUF type {qtype!r} has no Triton kernel; one of {sorted(FORMATS)}")
    check(x, "x", dim=2)
    check(raw, "raw", dtypes=(torch.uint8,), dim=2, device=x.device)
    if raw.data_ptr() % 2 or raw.stride(0) % 2:
        raise ValueError("raw must start on an even address with an even row stride (its fp16 scales are read as such)")
    m, k = x.shape
    if k % GROUP:
        raise ValueError(f"x has {k} columns, not whole blocks of {GROUP}")
    n = raw.shape[0]
    if raw.shape[1] != k // GROUP * fmt.block_bytes:
        raise ValueError(f"raw rows of {raw.shape[1]} bytes do not hold {k} {qtype} weights "
                         f"({k // GROUP * fmt.block_bytes} bytes)")
    out = matmul_output(x, n, residual, out)
    if trivial_matmul(out, residual, k):
        return out
    block_m, block_n, block_k, warps, stages = _tiles(x, m, n, k)
    grid = (triton.cdiv(m, block_m), triton.cdiv(n, block_n))
    _gguf_matmul_kernel[grid](
        x, raw, residual if residual is not None else out, out, m, n, k,
        x.stride(0), raw.stride(0), residual.stride(0) if residual is not None else 0, out.stride(0),
        BLOCK_BYTES=fmt.block_bytes, BITS=fmt.bits, HAS_MIN=fmt.has_min,
        HAS_RESIDUAL=residual is not None, F32_DOT=exact_dots(x),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps, num_stages=stages)
    return out
