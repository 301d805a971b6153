"""Rotary embedding of q and k in place, fused with the write of k and v into the paged KV cache."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from workers.kernels.triton.common import INDEX_DTYPES, check, interpreted, next_power_of_2

_GPU_TILE = 2048  # elements of one half-head tile per program on the GPU
_INTERPRETER_TILE = 1 << 15  # and under the interpreter


@triton.jit
def _rotary_store_kv_kernel(qkv_ptr, qkv_stride, cos_ptr, sin_ptr, slots_ptr, k_cache_ptr, v_cache_ptr,
                            tokens, heads, kv_heads, head_dim, cache_slots,
                            ROWS: tl.constexpr, HALF: tl.constexpr):
    # Each row of the tile is one (token, head) pair over all heads of qkv: q heads, then k heads, then v heads.
    # Columns are the first half of the head; the second half sits `half` further on.
    all_heads = heads + 2 * kv_heads
    half = head_dim // 2
    pair = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    token = pair // all_heads
    head = pair % all_heads
    valid = pair < tokens * all_heads
    col = tl.arange(0, HALF)[None, :]
    mask = valid[:, None] & (col < half)

    x_ptr = qkv_ptr + token.to(tl.int64)[:, None] * qkv_stride + head[:, None] * head_dim + col
    x1 = tl.load(x_ptr, mask=mask, other=0.0)
    x2 = tl.load(x_ptr + half, mask=mask, other=0.0)

    # Rotate-half: [x1, x2] * cos + [-x2, x1] * sin, per token's cos/sin row [head_dim], in float32.
    trig = token.to(tl.int64)[:, None] * head_dim + col
    cos1 = tl.load(cos_ptr + trig, mask=mask, other=0.0).to(tl.float32)
    cos2 = tl.load(cos_ptr + trig + half, mask=mask, other=0.0).to(tl.float32)
    sin1 = tl.load(sin_ptr + trig, mask=mask, other=0.0).to(tl.float32)
    sin2 = tl.load(sin_ptr + trig + half, mask=mask, other=0.0).to(tl.float32)
    r1 = (x1.to(tl.float32) * cos1 - x2.to(tl.float32) * sin1).to(x1.dtype)
    r2 = (x2.to(tl.float32) * cos2 + x1.to(tl.float32) * sin2).to(x1.dtype)
    rotated = head < heads + kv_heads  # q and k heads; v heads pass through untouched
    rot_mask = mask & rotated[:, None]
    tl.store(x_ptr, r1, mask=rot_mask)
    tl.store(x_ptr + half, r2, mask=rot_mask)

    # k and v of this token to its slot; a negative slot is a padding token that writes nothing.
    slot = tl.load(slots_ptr + token, mask=valid, other=-1).to(tl.int64)
    is_k = (head >= heads) & rotated
    is_v = head >= heads + kv_heads
    cache_head = tl.where(is_v, head - heads - kv_heads, head - heads)
    cache_row = (cache_head.to(tl.int64) * cache_slots + slot) * head_dim  # [KVH, cache_slots, D] flat
    dst = cache_row[:, None] + col
    write = mask & (slot >= 0)[:, None]
    k_mask = write & is_k[:, None]
    v_mask = write & is_v[:, None]
    tl.store(k_cache_ptr + dst, r1, mask=k_mask)
    tl.store(k_cache_ptr + dst + half, r2, mask=k_mask)
    tl.store(v_cache_ptr + dst, x1, mask=v_mask)
    tl.store(v_cache_ptr + dst + half, x2, mask=v_mask)


def rotary_store_kv(qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, slots: torch.Tensor,
                    k_cache: torch.Tensor, v_cache: torch.Tensor, heads: int, kv_heads: int, head_dim: int, *,
                    validate: bool = True) -> None:
    """Rotate qkv's q and k heads in place, then write k (rotated) and v into the caches.

    qkv [T, (heads + 2 kv_heads) * head_dim]: q | k | v per token, rows may be strided, float32, float16 or
    bfloat16. cos, sin [T, head_dim] contiguous: each token's rows (rotate-half convention, x * cos +
    cat(-x2, x1) * sin), in qkv's dtype or float32; the math runs in float32 either way. slots [T] int64 or
    int32: flat cache slot block_id * block_size + offset per token; a negative slot is padding and writes
    nothing (its q and k are still rotated). Caches [kv_heads, num_blocks, block_size, head_dim] contiguous,
    in qkv's dtype.

    validate=True checks dtypes, devices and layouts, and that every slot is below the cache's capacity: that
    last check syncs with the device, so call with validate=False per layer once the step's slots are checked
    (shapes are still checked: they cost no sync)."""
    _check_shapes(qkv, cos, sin, slots, k_cache, v_cache, heads, kv_heads, head_dim)
    if validate:
        _check_layouts(qkv, cos, sin, slots, k_cache, v_cache)
        capacity = k_cache.shape[1] * k_cache.shape[2]
        if slots.numel() and int(slots.max()) >= capacity:
            raise ValueError(f"slots out of range: the cache holds {capacity}")
    tokens = qkv.shape[0]
    pairs = tokens * (heads + 2 * kv_heads)
    if pairs == 0:
        return
    half = next_power_of_2(head_dim // 2)
    tile = _INTERPRETER_TILE if interpreted(qkv) else _GPU_TILE
    rows = min(next_power_of_2(pairs), max(1, tile // half))
    grid = (triton.cdiv(pairs, rows),)
    _rotary_store_kv_kernel[grid](qkv, qkv.stride(0), cos, sin, slots, k_cache, v_cache, tokens, heads, kv_heads,
                                  head_dim, k_cache.shape[1] * k_cache.shape[2], ROWS=rows, HALF=half,
                                  num_warps=4)


def _check_shapes(qkv, cos, sin, slots, k_cache, v_cache, heads: int, kv_heads: int, head_dim: int) -> None:
    if qkv.dim() != 2 or head_dim % 2 or head_dim < 2:
        raise ValueError(f"qkv must be [tokens, width] and head_dim even, got {tuple(qkv.shape)}, {head_dim}")
    tokens = qkv.shape[0]
    if qkv.shape[1] != (heads + 2 * kv_heads) * head_dim:
        raise ValueError(f"qkv width {qkv.shape[1]} is not (heads + 2 kv_heads) * head_dim")
    if cos.shape != (tokens, head_dim) or sin.shape != (tokens, head_dim) or slots.shape != (tokens,):
        raise ValueError("cos, sin and slots need one row per token")
    if k_cache.shape != v_cache.shape or k_cache.dim() != 4 or k_cache.shape[0] != kv_heads \
            or k_cache.shape[3] != head_dim:
        raise ValueError(f"caches of shape {tuple(k_cache.shape)} do not fit {kv_heads} heads of {head_dim}")


def _check_layouts(qkv, cos, sin, slots, k_cache, v_cache) -> None:
    check(qkv, "qkv")
    trig_dtypes = (qkv.dtype, torch.float32)
    check(cos, "cos", dtypes=trig_dtypes, device=qkv.device, contiguous=True)
    check(sin, "sin", dtypes=trig_dtypes, device=qkv.device, contiguous=True)
    check(slots, "slots", dtypes=INDEX_DTYPES, device=qkv.device, contiguous=True)
    check(k_cache, "k_cache", dtypes=(qkv.dtype,), device=qkv.device, contiguous=True)
    check(v_cache, "v_cache", dtypes=(qkv.dtype,), device=qkv.device, contiguous=True)
