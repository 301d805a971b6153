"""Paged decode attention, split-K ("flash-decoding"): one query token per sequence against its whole cached
context, read in place from the paged cache through the block table.

Phase 1 (`_decode_split_kernel`), grid (n, KVH, num_splits): each program serves every query head of one KV
head (GQA: the group's K/V tiles are loaded once) over one contiguous slice of the context, with an online
softmax. With one split it normalises and writes the output itself; otherwise it writes its unnormalised
partial (running max, sum of exponentials, weighted V) to a float32 scratch. Phase 2 (`_decode_merge_kernel`),
grid (n, H), merges a head's partials by log-sum-exp.

The grid depends on n, KVH and num_splits only, never on context_lens' values, so a step can be captured in a
CUDA graph: the kernels read each row's length on the device, and a split past the end of its row's context
runs no iterations (a row with context_len 0, a padding row, comes out as zeros)."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from workers.kernels.triton import common
from workers.kernels.triton.paged import EMPTY, LOG2E, attend_tile, check_paged_args, gpu_tiles

MAX_SPLITS = 16
MIN_SPLIT_TOKENS = 256   # below this a split's partial write and merge cost more than its parallelism buys
TARGET_PROGRAMS = 512    # enough (sequence, kv head, split) programs to keep every SM busy, a few per SM
INTERPRETED_MAX_BLOCK_N = 256  # keys per tile under the interpreter, which pays per op rather than per element


@triton.jit
def _decode_split_kernel(
        q_ptr, k_ptr, v_ptr, block_tables_ptr, context_lens_ptr, out_ptr, scratch_ptr,
        scale_log2, split_tokens,
        stride_qn, stride_qh, stride_kh, stride_kb, stride_kt, stride_btn, stride_on, stride_oh,
        stride_sn, stride_sh, stride_ss,
        GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_SIZE: tl.constexpr,
        BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, NUM_SPLITS: tl.constexpr, IEEE: tl.constexpr):
    seq = tl.program_id(0)
    kvh = tl.program_id(1)
    split = tl.program_id(2)
    context_len = tl.load(context_lens_ptr + seq).to(tl.int32)
    start = split * split_tokens
    end = tl.minimum(start + split_tokens, context_len)

    rows = tl.arange(0, GROUP_PAD)          # query heads of this KV head, padded to a dot-sized tile
    dims = tl.arange(0, BLOCK_D)
    row_ok = rows < GROUP
    dim_ok = dims < HEAD_DIM
    heads = kvh * GROUP + rows
    q = tl.load(q_ptr + seq.to(tl.int64) * stride_qn + heads[:, None] * stride_qh + dims[None, :],
                mask=row_ok[:, None] & dim_ok[None, :], other=0.0)  # [GROUP_PAD, BLOCK_D]

    k_head = k_ptr + kvh.to(tl.int64) * stride_kh
    v_head = v_ptr + kvh.to(tl.int64) * stride_kh  # both caches have one shape, contiguous
    table = block_tables_ptr + seq.to(tl.int64) * stride_btn
    m = tl.full([GROUP_PAD], EMPTY, tl.float32)    # running max of the log2-scaled scores
    l = tl.zeros([GROUP_PAD], tl.float32)          # running sum of exp2(score - m)
    acc = tl.zeros([GROUP_PAD, BLOCK_D], tl.float32)
    for tile in range(start, end, BLOCK_N):
        tokens = tile + tl.arange(0, BLOCK_N)
        tok_ok = tokens < end
        # Every row sees every token of its context: one visibility row for the whole group.
        m, l, acc = attend_tile(q, m, l, acc, k_head, v_head, table, tokens, tok_ok, tok_ok[None, :], dims, dim_ok,
                                scale_log2, stride_kb, stride_kt, BLOCK_SIZE, IEEE)

    if NUM_SPLITS == 1:
        # l == 0 only when the row has no context: acc is 0 there, and so is the output.
        o = acc / tl.where(l > 0, l, 1.0)[:, None]
        tl.store(out_ptr + seq.to(tl.int64) * stride_on + heads[:, None] * stride_oh + dims[None, :],
                 o.to(out_ptr.dtype.element_ty), mask=row_ok[:, None] & dim_ok[None, :])
    else:
        # scratch [n, H, NUM_SPLITS, HEAD_DIM + 2]: weighted V, then m, then l.
        part = scratch_ptr + seq.to(tl.int64) * stride_sn + heads * stride_sh + split * stride_ss  # [GROUP_PAD]
        tl.store(part[:, None] + dims[None, :], acc, mask=row_ok[:, None] & dim_ok[None, :])
        tl.store(part + HEAD_DIM, m, mask=row_ok)
        tl.store(part + HEAD_DIM + 1, l, mask=row_ok)


@triton.jit
def _decode_merge_kernel(
        scratch_ptr, out_ptr, stride_sn, stride_sh, stride_ss, stride_on, stride_oh,
        HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, NUM_SPLITS: tl.constexpr, SPLITS_PAD: tl.constexpr):
    seq = tl.program_id(0)
    head = tl.program_id(1)
    splits = tl.arange(0, SPLITS_PAD)
    dims = tl.arange(0, BLOCK_D)
    split_ok = splits < NUM_SPLITS
    dim_ok = dims < HEAD_DIM
    part = scratch_ptr + seq.to(tl.int64) * stride_sn + head * stride_sh + splits * stride_ss  # [SPLITS_PAD]
    m = tl.load(part + HEAD_DIM, mask=split_ok, other=float("-inf"))
    l = tl.load(part + HEAD_DIM + 1, mask=split_ok, other=0.0)
    acc = tl.load(part[:, None] + dims[None, :], mask=split_ok[:, None] & dim_ok[None, :], other=0.0)
    # Rescale every split to the global max: sum_s 2^(m_s - M) acc_s / sum_s 2^(m_s - M) l_s. Empty splits
    # carry l = acc = 0, so they drop out; a row with no context at all has total 0 and comes out as zeros.
    m_max = tl.max(m, 0)
    w = tl.exp2(m - m_max)
    total = tl.sum(w * l, 0)
    o = tl.sum(w[:, None] * acc, 0) / tl.where(total > 0, total, 1.0)
    tl.store(out_ptr + seq.to(tl.int64) * stride_on + head * stride_oh + dims, o.to(out_ptr.dtype.element_ty),
             mask=dim_ok)


def default_num_splits(n: int, kv_heads: int, max_blocks: int, block_size: int, *, interpreted: bool) -> int:
    """Splits per (sequence, KV head), from shapes only (CUDA-graph safe): enough programs to fill the GPU,
    each split at least MIN_SPLIT_TOKENS of the padded context. One under the interpreter, where every
    extra program is pure overhead."""
    if interpreted:
        return 1
    by_length = (max_blocks * block_size) // MIN_SPLIT_TOKENS
    by_occupancy = triton.cdiv(TARGET_PROGRAMS, max(1, n * kv_heads))
    return max(1, min(MAX_SPLITS, by_length, by_occupancy))


def paged_decode_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                           block_tables: torch.Tensor, context_lens: torch.Tensor, scale: float,
                           out: torch.Tensor | None = None, *, num_splits: int | None = None,
                           validate: bool = True) -> torch.Tensor:
    """q [n, H, D] (any row and head strides, last dim contiguous); caches [KVH, num_blocks, block_size, D]
    contiguous, q's dtype (float32, float16 or bfloat16); block_tables [n, max_blocks] and context_lens [n]
    int32 or int64. Row i attends to its first context_lens[i] cached tokens; 0 gives a zero row.
    Returns out [n, H, D] (allocated if None). Any block_size works; H must be a multiple of KVH.

    num_splits: context slices per (sequence, KV head), merged by log-sum-exp; None picks one from the shapes
    (default_num_splits). validate=False skips the index-range checks, which synchronise with the device,
    for callers that validate a step's indices once; the shape and dtype checks always run."""
    _check_args(q, k_cache, v_cache, block_tables, context_lens, out)
    n, heads, head_dim = q.shape
    kv_heads, num_blocks, block_size, _ = k_cache.shape
    max_blocks = block_tables.shape[1]
    if validate:
        common.check_index_range(block_tables, "block_tables", 0, num_blocks)
        common.check_index_range(context_lens, "context_lens", 0, max_blocks * block_size + 1)
    if out is None:
        out = torch.empty((n, heads, head_dim), dtype=q.dtype, device=q.device)
    if n == 0:
        return out
    interp = common.interpreted(q)
    if num_splits is None:
        num_splits = default_num_splits(n, kv_heads, max_blocks, block_size, interpreted=interp)
    if num_splits < 1:
        raise ValueError(f"num_splits must be >= 1, got {num_splits}")

    group = heads // kv_heads
    max_tokens = max(1, max_blocks * block_size)
    per_split = triton.cdiv(max_tokens, num_splits)
    block_d = max(16, common.next_power_of_2(head_dim))
    if interp:
        block_n = min(INTERPRETED_MAX_BLOCK_N, max(16, common.next_power_of_2(per_split)))  # a split per tile
        launch = {}
    else:
        block_n, num_warps = gpu_tiles(q.element_size(), block_d)
        launch = {"num_warps": num_warps}
    split_tokens = triton.cdiv(per_split, block_n) * block_n  # whole tiles per split
    scratch = out  # unused with one split; any tensor fills the pointer argument
    if num_splits > 1:
        # [n, H, num_splits, D + 2] float32: each split's weighted V, running max, sum of exponentials
        scratch = torch.empty((n, heads, num_splits, head_dim + 2), dtype=torch.float32, device=q.device)
    _decode_split_kernel[(n, kv_heads, num_splits)](
        q, k_cache, v_cache, block_tables, context_lens, out, scratch,
        scale * LOG2E, split_tokens,
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        block_tables.stride(0), out.stride(0), out.stride(1),
        scratch.stride(0), scratch.stride(1), scratch.stride(2),
        GROUP=group, GROUP_PAD=max(16, common.next_power_of_2(group)), HEAD_DIM=head_dim, BLOCK_SIZE=block_size,
        BLOCK_N=block_n, BLOCK_D=block_d, NUM_SPLITS=num_splits, IEEE=common.exact_dots(q), **launch)
    if num_splits > 1:
        _decode_merge_kernel[(n, heads)](
            scratch, out, scratch.stride(0), scratch.stride(1), scratch.stride(2), out.stride(0), out.stride(1),
            HEAD_DIM=head_dim, BLOCK_D=block_d, NUM_SPLITS=num_splits,
            SPLITS_PAD=common.next_power_of_2(num_splits))  # a few KB per program: default warps
    return out


def _check_args(q, k_cache, v_cache, block_tables, context_lens, out) -> None:
    """Shapes, dtypes, devices and layouts; never syncs."""
    check_paged_args(q, k_cache, v_cache, block_tables, out, context_lens=context_lens)
    n = q.shape[0]
    if block_tables.shape[0] != n or context_lens.shape[0] != n:
        raise ValueError(f"block_tables {tuple(block_tables.shape)} and context_lens {tuple(context_lens.shape)} "
                         f"need one row per query ({n})")
