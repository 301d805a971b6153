"""Paged "extend" attention: the new tokens of P sequences (prompt chunks, with or without a cached prefix,
or single decode tokens) attend causally to their sequence's keys, all read in place from the paged cache
through the block table; the new tokens' K/V are written to the cache before this runs.

Grid (P, KVH, cdiv(max_query_len, BLOCK_Q)). A program serves BLOCK_Q consecutive queries of one sequence for
every query head of one KV head (GQA: each K/V tile is loaded once for the whole group), flattened into
BLOCK_Q * GROUP_PAD rows of one dot tile, with an online softmax in float32. Programs whose query tile starts
past their sequence's length exit at once, so max_query_len is a host-side bound, never read from the device."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from workers.kernels.triton import common
from workers.kernels.triton.paged import EMPTY, LOG2E, attend_tile, check_paged_args, gpu_tiles

# Under the interpreter, which pays per op rather than per element: rows (queries x group) and keys per tile.
INTERPRETED_MAX_ROWS = 256
INTERPRETED_MAX_BLOCK_N = 256


@triton.jit
def _prefill_kernel(
        q_ptr, k_ptr, v_ptr, block_tables_ptr, query_start_ptr, context_lens_ptr, out_ptr, scale_log2,
        stride_qt, stride_qh, stride_kh, stride_kb, stride_kt, stride_btp, stride_ot, stride_oh,
        GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_SIZE: tl.constexpr,
        BLOCK_Q: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
        IEEE: tl.constexpr):
    seq = tl.program_id(0)
    kvh = tl.program_id(1)
    q_tile = tl.program_id(2) * BLOCK_Q
    q_begin = tl.load(query_start_ptr + seq).to(tl.int32)
    q_len = tl.load(query_start_ptr + seq + 1).to(tl.int32) - q_begin
    if q_tile >= q_len:
        return
    context_len = tl.load(context_lens_ptr + seq).to(tl.int32)
    prefix = context_len - q_len  # cached tokens before this chunk: query i sits at position prefix + i

    # Row r of the tile is query q_tile + r // GROUP_PAD, head r % GROUP_PAD of this KV head's group.
    rows = tl.arange(0, BLOCK_M)
    query = q_tile + rows // GROUP_PAD
    member = rows % GROUP_PAD
    dims = tl.arange(0, BLOCK_D)
    row_ok = (query < q_len) & (member < GROUP)
    dim_ok = dims < HEAD_DIM
    pos = prefix + query  # [BLOCK_M] last key each row may see
    heads = kvh * GROUP + member
    token = (q_begin + query).to(tl.int64)
    io_mask = row_ok[:, None] & dim_ok[None, :]
    q = tl.load(q_ptr + token[:, None] * stride_qt + heads[:, None] * stride_qh + dims[None, :], mask=io_mask,
                other=0.0)  # [BLOCK_M, BLOCK_D]

    k_head = k_ptr + kvh.to(tl.int64) * stride_kh
    v_head = v_ptr + kvh.to(tl.int64) * stride_kh  # both caches have one shape, contiguous
    table = block_tables_ptr + seq.to(tl.int64) * stride_btp
    # Keys past the tile's last query are invisible to every row of it.
    kv_end = prefix + tl.minimum(q_tile + BLOCK_Q, q_len)
    m = tl.full([BLOCK_M], EMPTY, tl.float32)
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for tile in range(0, kv_end, BLOCK_N):
        keys = tile + tl.arange(0, BLOCK_N)
        key_ok = keys < kv_end
        visible = key_ok[None, :] & (keys[None, :] <= pos[:, None])  # causal
        m, l, acc = attend_tile(q, m, l, acc, k_head, v_head, table, keys, key_ok, visible, dims, dim_ok,
                                scale_log2, stride_kb, stride_kt, BLOCK_SIZE, IEEE)

    # Every stored row sees key 0 at least, so l > 0 there; the guard only keeps masked padding rows finite.
    o = acc / tl.where(l > 0, l, 1.0)[:, None]
    tl.store(out_ptr + token[:, None] * stride_ot + heads[:, None] * stride_oh + dims[None, :],
             o.to(out_ptr.dtype.element_ty), mask=io_mask)


def paged_prefill_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                            block_tables: torch.Tensor, query_start: torch.Tensor, context_lens: torch.Tensor,
                            scale: float, out: torch.Tensor | None = None, *, max_query_len: int,
                            validate: bool = True) -> torch.Tensor:
    """q [T, H, D] (any row and head strides, last dim contiguous): the new tokens of P sequences, sequence p's
    at rows query_start[p]:query_start[p + 1]; caches [KVH, num_blocks, block_size, D] contiguous, q's dtype
    (float32, float16 or bfloat16), already holding the new tokens' K/V; block_tables [P, max_blocks],
    query_start [P + 1], context_lens [P] (tokens in the cache including the new ones), int32 or int64.
    Query i of sequence p attends to keys 0 .. context_lens[p] - q_len_p + i. Returns out [T, H, D]
    (allocated if None); rows outside every sequence's range are left unwritten. Any block_size works;
    H must be a multiple of KVH.

    max_query_len: a host-side bound on every q_len (it sizes the grid without a device sync).
    validate=False skips the index-range checks, which synchronise with the device, for callers that
    validate a step's indices once; the shape and dtype checks always run."""
    _check_args(q, k_cache, v_cache, block_tables, query_start, context_lens, out, max_query_len)
    tokens, heads, head_dim = q.shape
    kv_heads, num_blocks, block_size, _ = k_cache.shape
    num_seqs, max_blocks = block_tables.shape
    if validate:
        _check_ranges(block_tables, query_start, context_lens, num_blocks, max_blocks * block_size, tokens,
                      max_query_len)
    if out is None:
        out = torch.empty((tokens, heads, head_dim), dtype=q.dtype, device=q.device)
    if num_seqs == 0 or tokens == 0 or max_query_len == 0:
        return out

    group = heads // kv_heads
    group_pad = common.next_power_of_2(group)
    interp = common.interpreted(q)
    # At least 16 rows (the smallest dot tile); up to 64 on a GPU (register pressure of a [64, D] float32
    # accumulator), more under the interpreter (fewer, larger programs).
    rows = INTERPRETED_MAX_ROWS if interp else 64
    block_q = max(1, 16 // group_pad, min(common.next_power_of_2(max_query_len), max(1, rows // group_pad)))
    block_d = max(16, common.next_power_of_2(head_dim))
    if interp:
        block_n = min(INTERPRETED_MAX_BLOCK_N, max(16, common.next_power_of_2(max_blocks * block_size)))
        launch = {}
    else:
        block_n, num_warps = gpu_tiles(q.element_size(), block_d)
        launch = {"num_warps": num_warps}
    _prefill_kernel[(num_seqs, kv_heads, triton.cdiv(max_query_len, block_q))](
        q, k_cache, v_cache, block_tables, query_start, context_lens, out, scale * LOG2E,
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), block_tables.stride(0),
        out.stride(0), out.stride(1),
        GROUP=group, GROUP_PAD=group_pad, HEAD_DIM=head_dim, BLOCK_SIZE=block_size, BLOCK_Q=block_q,
        BLOCK_M=block_q * group_pad, BLOCK_N=block_n, BLOCK_D=block_d,
        IEEE=common.exact_dots(q), **launch)
    return out


def _check_args(q, k_cache, v_cache, block_tables, query_start, context_lens, out, max_query_len) -> None:
    """Shapes, dtypes, devices and layouts; never syncs."""
    check_paged_args(q, k_cache, v_cache, block_tables, out, query_start=query_start, context_lens=context_lens)
    num_seqs = block_tables.shape[0]
    if context_lens.shape[0] != num_seqs or query_start.shape[0] != num_seqs + 1:
        raise ValueError(f"block_tables {tuple(block_tables.shape)}, query_start {tuple(query_start.shape)} and "
                         f"context_lens {tuple(context_lens.shape)} do not describe one set of sequences")
    if not isinstance(max_query_len, int) or max_query_len < 0:
        raise ValueError(f"max_query_len must be a non-negative int, got {max_query_len!r}")


def _check_ranges(block_tables, query_start, context_lens, num_blocks: int, max_context: int, tokens: int,
                  max_query_len: int) -> None:
    """Every read and write lands inside q, out and the cache. Syncs with the device."""
    common.check_index_range(block_tables, "block_tables", 0, num_blocks)
    common.check_index_range(context_lens, "context_lens", 0, max_context + 1)
    common.check_index_range(query_start, "query_start", 0, tokens + 1)
    q_lens = query_start[1:] - query_start[:-1]
    common.check_index_range(q_lens, f"query lengths (query_start steps, max_query_len {max_query_len})", 0,
                             max_query_len + 1)
    common.check_index_range(context_lens - q_lens, "context_lens - query lengths (cached prefix)", 0,
                             max_context + 1)
