"""The Triton paged extend (prefill) attention against a plain PyTorch causal softmax over each sequence's
gathered context: plain prompts, chunks after a cached prefix, single decode tokens, several sequences in one
call, GQA groups 1, 3 and 4, block sizes 4, 5, 8 and 16, scattered block ids, strided q, index checks. CPU
tensors run under Triton's interpreter."""
import pytest
import torch

from tests.workers.kernels.triton.support import (ATTENTION_SHAPES, DEVICE, gather_context, gen, paged_cache,
                                                  strided_q_and_out)
from workers.kernels.triton import prefill_attention as module
from workers.kernels.triton.decode_attention import paged_decode_attention
from workers.kernels.triton.prefill_attention import paged_prefill_attention

# (new tokens, tokens in the cache including them): a plain prompt, a chunk after a cached prefix that
# starts mid-block, a decode token, a prompt of one token, a long chunk crossing many blocks after a prefix.
SEQS = [(21, 21), (7, 30), (1, 18), (1, 1), (35, 40)]


def _inputs(heads, kv_heads, head_dim, block_size, seqs=SEQS, dtype=torch.float32, seed=0, spare=3):
    """q [T, H, D] for the new tokens, random caches [KVH, num_blocks, block_size, D], a block table
    [P, max_blocks] of shuffled ids (rows padded with further valid ids), query_start [P + 1], context_lens."""
    g = gen(seed)
    k_cache, v_cache, table = paged_cache(kv_heads, head_dim, block_size, [length for _, length in seqs], dtype, g,
                                          spare=spare)
    q_lens = [q_len for q_len, _ in seqs]
    q = torch.randn(sum(q_lens), heads, head_dim, generator=g).to(dtype).to(DEVICE)
    query_start = torch.tensor([0, *q_lens], device=DEVICE).cumsum(0)
    context_lens = torch.tensor([length for _, length in seqs], device=DEVICE)
    return q, k_cache, v_cache, table, query_start, context_lens


def _reference(q, k_cache, v_cache, block_tables, query_start, context_lens, scale):
    """Per sequence, in float64: query i at position context_len - q_len + i attends to keys 0 .. that position."""
    heads = q.shape[1]
    out = torch.zeros(q.shape, dtype=torch.float64)
    for seq in range(block_tables.shape[0]):
        begin, end, length = int(query_start[seq]), int(query_start[seq + 1]), int(context_lens[seq])
        keys, values = gather_context(k_cache, v_cache, block_tables[seq], length, heads)
        scores = torch.einsum("thd,hld->htl", q[begin:end].cpu().double(), keys) * scale
        positions = torch.arange(length - (end - begin), length)
        scores = scores.masked_fill(torch.arange(length)[None, :] > positions[:, None], float("-inf"))
        out[begin:end] = torch.einsum("htl,hld->thd", torch.softmax(scores, dim=-1), values)
    return out


def _max_query_len(seqs=SEQS):
    return max(q_len for q_len, _ in seqs)


@pytest.mark.parametrize("heads,kv_heads,head_dim,block_size", ATTENTION_SHAPES)
def test_matches_the_reference_for_prompts_chunks_and_decode_tokens(heads, kv_heads, head_dim, block_size):
    args = _inputs(heads, kv_heads, head_dim, block_size)
    scale = head_dim ** -0.5
    got = paged_prefill_attention(*args, scale, max_query_len=_max_query_len())
    torch.testing.assert_close(got.cpu().double(), _reference(*args, scale), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("heads,kv_heads,head_dim,block_size", [(9, 3, 64, 5), (8, 2, 32, 16)])
def test_small_tiles_as_on_a_gpu(monkeypatch, heads, kv_heads, head_dim, block_size):
    # 16-row, 16-key tiles: chunks span several query tiles, each running several key tiles across blocks,
    # with the causal diagonal inside a tile.
    monkeypatch.setattr(module, "INTERPRETED_MAX_ROWS", 16)
    monkeypatch.setattr(module, "INTERPRETED_MAX_BLOCK_N", 16)
    args = _inputs(heads, kv_heads, head_dim, block_size, seed=8)
    got = paged_prefill_attention(*args, 0.125, max_query_len=_max_query_len())
    torch.testing.assert_close(got.cpu().double(), _reference(*args, 0.125), atol=1e-5, rtol=1e-5)


def test_query_tiles_split_a_long_chunk_and_a_loose_bound_is_harmless():
    # 300 new tokens after a 21-token prefix: more than one query tile even under the interpreter; the
    # grid's bound is twice the longest chunk, so whole programs find no queries and exit.
    seqs = [(300, 321), (2, 9)]
    args = _inputs(4, 2, 32, 16, seqs=seqs, seed=1)
    got = paged_prefill_attention(*args, 0.2, max_query_len=600)
    torch.testing.assert_close(got.cpu().double(), _reference(*args, 0.2), atol=1e-5, rtol=1e-5)


def test_decode_tokens_match_the_decode_kernel():
    seqs = [(1, 37), (1, 1), (1, 16), (1, 29)]
    q, k_cache, v_cache, table, query_start, lens = _inputs(9, 3, 64, 8, seqs=seqs, seed=2)
    got = paged_prefill_attention(q, k_cache, v_cache, table, query_start, lens, 0.125, max_query_len=1)
    want = paged_decode_attention(q, k_cache, v_cache, table, lens, 0.125)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)


def test_strided_q_and_out_int32_indices():
    heads, kv_heads, head_dim = 9, 3, 64
    q0, k_cache, v_cache, table, query_start, lens = _inputs(heads, kv_heads, head_dim, 16, seed=3)
    q, out, wide = strided_q_and_out(q0, kv_heads)
    got = paged_prefill_attention(q, k_cache, v_cache, table.int(), query_start.int(), lens.int(), 0.125, out,
                                  max_query_len=_max_query_len())
    assert got is out
    torch.testing.assert_close(out.cpu().double(), _reference(q0, k_cache, v_cache, table, query_start, lens, 0.125),
                               atol=1e-5, rtol=1e-5)
    assert torch.equal(wide[..., head_dim:].cpu(), torch.full((q0.shape[0], heads, 8), 7.0))


# The reference sees the same rounded inputs in float64; what is left is the kernel's rounding of p (to the
# input dtype for the P.V dot on a GPU) and of the output.
@pytest.mark.parametrize("dtype,tol", [(torch.float16, 3e-3), (torch.bfloat16, 2e-2)])
def test_half_precision_inputs(dtype, tol):
    args = _inputs(9, 3, 64, 16, dtype=dtype, seed=4)
    got = paged_prefill_attention(*args, 0.125, max_query_len=_max_query_len())
    assert got.dtype == dtype
    torch.testing.assert_close(got.cpu().double(), _reference(*args, 0.125), atol=tol, rtol=tol)


def test_unchecked_calls_never_read_the_table_past_a_rows_context():
    q, k_cache, v_cache, table, query_start, lens = _inputs(4, 2, 32, 8, seed=5)
    want = paged_prefill_attention(q, k_cache, v_cache, table, query_start, lens, 0.2,
                                   max_query_len=_max_query_len())
    padded = table.clone()
    padded[:, -1] = 10 ** 6  # the unused column: out of range, refused when checked, never dereferenced
    with pytest.raises(ValueError, match="block_tables"):
        paged_prefill_attention(q, k_cache, v_cache, padded, query_start, lens, 0.2, max_query_len=_max_query_len())
    got = paged_prefill_attention(q, k_cache, v_cache, padded, query_start, lens, 0.2,
                                  max_query_len=_max_query_len(), validate=False)
    assert torch.equal(got, want)


@pytest.mark.parametrize("case,message", [
    ("block id below 0", "block_tables"),
    ("block id past the pool", "block_tables"),
    ("context past the table", "context_lens"),
    ("context shorter than the chunk", "cached prefix"),
    ("query_start past q", "query_start"),
    ("query_start decreasing", "query lengths"),
    ("chunk longer than max_query_len", "max_query_len"),
])
def test_out_of_range_indices_are_refused(case, message):
    q, k_cache, v_cache, table, query_start, lens = _inputs(4, 2, 32, 8, seed=6)
    max_query_len = _max_query_len()
    if case == "block id below 0":
        table[1, 0] = -1
    elif case == "block id past the pool":
        table[1, 0] = k_cache.shape[1]
    elif case == "context past the table":
        lens[1] = table.shape[1] * k_cache.shape[2] + 1
    elif case == "context shorter than the chunk":
        lens[0] = SEQS[0][0] - 1
    elif case == "query_start past q":
        query_start[-1] = q.shape[0] + 1
    elif case == "query_start decreasing":
        query_start[1] = query_start[2] + 1
    else:
        max_query_len -= 1
    with pytest.raises(ValueError, match=message):
        paged_prefill_attention(q, k_cache, v_cache, table, query_start, lens, 0.2, max_query_len=max_query_len)


def test_bad_shapes_and_dtypes_are_refused_even_unchecked():
    q, k_cache, v_cache, table, query_start, lens = _inputs(4, 2, 32, 8, seed=7)
    cases = [
        (q.half(), k_cache, v_cache, table, query_start, lens),         # q and cache dtypes differ
        (q[:, :3], k_cache, v_cache, table, query_start, lens),         # 3 heads over 2 KV heads
        (q[..., :16], k_cache, v_cache, table, query_start, lens),      # head_dim differs from the cache's
        (q, k_cache, v_cache[:1], table, query_start, lens),            # k and v caches differ
        (q, k_cache, v_cache, table, query_start[:-1], lens),           # query_start without its end
        (q, k_cache, v_cache, table, query_start, lens[:2]),            # a sequence without a length
        (q, k_cache, v_cache, table, query_start.float(), lens),        # float indices
    ]
    for args in cases:
        with pytest.raises(ValueError):
            paged_prefill_attention(*args, 0.2, max_query_len=_max_query_len(), validate=False)
    with pytest.raises(ValueError, match="out"):
        paged_prefill_attention(q, k_cache, v_cache, table, query_start, lens, 0.2, torch.empty_like(q)[:1],
                                max_query_len=_max_query_len(), validate=False)
    with pytest.raises(ValueError, match="max_query_len"):
        paged_prefill_attention(q, k_cache, v_cache, table, query_start, lens, 0.2, max_query_len=-1)
