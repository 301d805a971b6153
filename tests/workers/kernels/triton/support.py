"""Test helpers for the Triton kernels: the device they run on, seeded generators, the matmuls' reference and
tolerance, and the paged KV cache the attention tests read through a block table."""
from __future__ import annotations

import math
import os

import torch

DEVICE = "cuda" if os.environ.get("TRITON_INTERPRET") == "0" else "cpu"  # compiled kernels on a GPU machine

# |y - ref| relative to max |ref|: float32 is exact products summed in float32; the half types round x, y and
# (GGUF) each dequantized weight to their own precision. int8 and int4 q are exact in every dtype.
MATMUL_TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.5e-2}

# (heads, kv_heads, head_dim, block_size) both attention kernels must match their reference on.
ATTENTION_SHAPES = [
    (9, 3, 64, 16),   # SmolLM2: groups of 3
    (8, 2, 32, 4),    # groups of 4
    (4, 4, 32, 8),    # plain multi-head
    (6, 2, 64, 5),    # a block size that is not a power of two
]


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def matmul_reference(x: torch.Tensor, w: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
    """x @ w^T (+ residual) in float64 on the CPU."""
    y = x.double() @ w.double().T
    return y if residual is None else y + residual.double()


def assert_matmul_close(y: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> None:
    assert y.dtype == dtype and y.device.type == DEVICE
    err = (y.cpu().double() - ref).abs().max().item()
    assert err <= MATMUL_TOLERANCE[dtype] * ref.abs().max().item(), err


def paged_cache(kv_heads: int, head_dim: int, block_size: int, context_lens: list[int], dtype: torch.dtype,
                g: torch.Generator, *, spare: int = 3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random caches [KVH, num_blocks, block_size, D] and a block table [n, max_blocks] whose ids are a shuffle
    of the pool (never in order); rows pad their table with further valid ids, as the engine does. On DEVICE."""
    per_row = [math.ceil(length / block_size) for length in context_lens]
    max_blocks = max(per_row) + 1  # one unused column for every row
    num_blocks = sum(per_row) + spare
    ids = torch.randperm(num_blocks, generator=g)
    table = torch.randint(0, num_blocks, (len(context_lens), max_blocks), generator=g)
    used = 0
    for row, count in enumerate(per_row):
        table[row, :count] = ids[used:used + count]
        used += count
    k_cache = torch.randn(kv_heads, num_blocks, block_size, head_dim, generator=g).to(dtype)
    v_cache = torch.randn(kv_heads, num_blocks, block_size, head_dim, generator=g).to(dtype)
    return k_cache.to(DEVICE), v_cache.to(DEVICE), table.to(DEVICE)


def gather_context(k_cache: torch.Tensor, v_cache: torch.Tensor, table_row: torch.Tensor, length: int,
                   heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One sequence's first `length` keys and values through its block table row, float64 on the CPU, each
    [H, length, D]: KV head j serves the H / KVH consecutive query heads from j * H / KVH."""
    kv_heads, _, block_size, head_dim = k_cache.shape
    blocks = table_row[:math.ceil(length / block_size)].long().cpu()
    keys, values = (cache.cpu()[:, blocks].reshape(kv_heads, -1, head_dim)[:, :length].double()
                    for cache in (k_cache, v_cache))
    return keys.repeat_interleave(heads // kv_heads, dim=0), values.repeat_interleave(heads // kv_heads, dim=0)


def strided_q_and_out(q0: torch.Tensor, kv_heads: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(q, out, wide) on DEVICE. q holds q0 [T, H, D] as the fused projection hands it over: a view into
    [T, (H + 2 KVH) * D], rows far apart. out is a strided view of wide [T, H, D + 8], all 7.0, whose last 8
    columns a kernel writing out must leave alone."""
    tokens, heads, head_dim = q0.shape
    qkv = torch.randn(tokens, (heads + 2 * kv_heads) * head_dim, device=DEVICE)
    qkv[:, :heads * head_dim] = q0.reshape(tokens, -1)
    wide = torch.full((tokens, heads, head_dim + 8), 7.0, device=DEVICE)
    return qkv[:, :heads * head_dim].view(tokens, heads, head_dim), wide[..., :head_dim], wide
