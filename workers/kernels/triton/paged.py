"""What the two paged attention kernels (decode_attention, prefill_attention) share: the step each repeats over
its keys, one K/V tile read in place through the block table and folded into a running online softmax (a jit
helper each kernel inlines, told which keys each row may see) and its GPU tile sizes, and the checks of q
against the paged caches.

The softmax runs in base 2: log2(e) is folded into the scale the launcher passes (scale_log2), so each
exponential is a bare exp2 (the GPU's ex2), where exp would add a multiply per score."""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from workers.kernels.triton import common

LOG2E = math.log2(math.e)
# Running maxima start finite, not at -inf: a row with no visible key yet (an empty split, a padding row, a
# row whose keys are all masked so far) then gives exp2(-inf - EMPTY) = 0 rather than exp2(-inf + inf) = NaN.
EMPTY = tl.constexpr(-1.0e30)


@triton.jit
def attend_tile(q, m, l, acc, k_head, v_head, table, keys, key_ok, visible, dims, dim_ok, scale_log2,
                stride_kb, stride_kt, BLOCK_SIZE: tl.constexpr, IEEE: tl.constexpr):
    """Fold keys [BLOCK_N] (key_ok: inside the context, so safe to read) into the online softmax of q's rows
    [ROWS, BLOCK_D]: m [ROWS] is the running max of the log2-scaled scores, l [ROWS] the running sum of
    exp2(score - m), acc [ROWS, BLOCK_D] the running exp2-weighted sum of V. visible [ROWS or 1, BLOCK_N]
    says which keys each row may see (never a key outside key_ok). Returns the updated (m, l, acc)."""
    # Each key finds its own block, so a tile may straddle blocks and block_size need not divide it.
    block = tl.load(table + keys // BLOCK_SIZE, mask=key_ok, other=0).to(tl.int64)
    slot = block * stride_kb + (keys % BLOCK_SIZE) * stride_kt  # [BLOCK_N]
    kt = tl.load(k_head + slot[None, :] + dims[:, None], mask=dim_ok[:, None] & key_ok[None, :],
                 other=0.0)  # [BLOCK_D, BLOCK_N], K already transposed for the dot
    if IEEE:  # exact float32 products (not TF32), so float32 results match a float32 reference
        s = tl.dot(q.to(tl.float32), kt.to(tl.float32), input_precision="ieee")
    else:
        s = tl.dot(q, kt)
    s = tl.where(visible, s * scale_log2, float("-inf"))  # [ROWS, BLOCK_N]
    m_new = tl.maximum(m, tl.max(s, 1))
    alpha = tl.exp2(m - m_new)
    p = tl.exp2(s - m_new[:, None])
    l = l * alpha + tl.sum(p, 1)
    v = tl.load(v_head + slot[:, None] + dims[None, :], mask=key_ok[:, None] & dim_ok[None, :],
                other=0.0)  # [BLOCK_N, BLOCK_D]
    if IEEE:
        pv = tl.dot(p, v.to(tl.float32), input_precision="ieee")
    else:
        pv = tl.dot(p.to(v.dtype), v)
    return m_new, l, acc * alpha[:, None] + pv


def gpu_tiles(element_size: int, block_d: int) -> tuple[int, int]:
    """(BLOCK_N, num_warps) for attend_tile that compile for sm_90 without register spills, up to 64 rows (8
    bytes at most; ptxas, triton 3.6 and 3.9): a tile's K and V addresses are per-token 64-bit pointers,
    [BLOCK_D, BLOCK_N] of them, so wide heads and float32 (FMA dots, no tensor cores) take narrower tiles or
    more warps."""
    block_n = 64 if element_size == 2 and block_d <= 128 else 32
    return block_n, 4 if element_size == 2 and block_d <= 64 else 8


def check_paged_args(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, block_tables: torch.Tensor,
                     out: torch.Tensor | None, **indices: torch.Tensor) -> None:
    """q [tokens, H, D] against caches [KVH, num_blocks, block_size, D] and an index tensor per sequence
    (block_tables [num_seqs, max_blocks], then the kernel's own, 1-D, by name); out, if given, q's twin.
    Shapes, dtypes, devices and layouts; never syncs."""
    common.check(q, "q", dim=3)
    device = q.device
    common.check(k_cache, "k_cache", dtypes=(q.dtype,), dim=4, device=device, contiguous=True)
    common.check(v_cache, "v_cache", dtypes=(q.dtype,), dim=4, device=device, contiguous=True)
    common.check(block_tables, "block_tables", dtypes=common.INDEX_DTYPES, dim=2, device=device)
    for name, t in indices.items():
        common.check(t, name, dtypes=common.INDEX_DTYPES, dim=1, device=device)
    _, heads, head_dim = q.shape
    kv_heads, _, block_size, cache_dim = k_cache.shape
    if v_cache.shape != k_cache.shape:
        raise ValueError(f"v_cache {tuple(v_cache.shape)} and k_cache {tuple(k_cache.shape)} differ")
    if cache_dim != head_dim or kv_heads == 0 or heads % kv_heads or block_size == 0:
        raise ValueError(f"q {tuple(q.shape)} does not fit caches {tuple(k_cache.shape)}")
    if out is not None:
        common.check(out, "out", dtypes=(q.dtype,), dim=3, device=device)
        if out.shape != q.shape:
            raise ValueError(f"out has shape {tuple(out.shape)}, expected {tuple(q.shape)}")
