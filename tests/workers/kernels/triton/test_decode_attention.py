"""The Triton split-K paged decode attention against a plain PyTorch softmax over each sequence's gathered
context: GQA groups 1, 3 and 4, block sizes 4, 5, 8 and 16, scattered block ids, partial last blocks, rows of
different lengths (and of none), several splits merged by log-sum-exp, strided q, index checks. CPU tensors run
under Triton's interpreter."""
import pytest
import torch

from tests.workers.kernels.triton.support import (ATTENTION_SHAPES, DEVICE, gather_context, gen, paged_cache,
                                                  strided_q_and_out)
from workers.kernels.triton import decode_attention as module
from workers.kernels.triton.decode_attention import paged_decode_attention

# Lengths that stop inside a block, on a block boundary, at one token, and a padding row of none.
CONTEXT_LENS = [37, 16, 1, 0, 29]


def _reference(q, k_cache, v_cache, block_tables, context_lens, scale):
    """softmax(q k^T * scale) v per row, in float64 over the row's gathered context; zeros for no context."""
    n, heads, head_dim = q.shape
    out = torch.zeros(n, heads, head_dim, dtype=torch.float64)
    for row in range(n):
        length = int(context_lens[row])
        if not length:
            continue
        keys, values = gather_context(k_cache, v_cache, block_tables[row], length, heads)
        scores = torch.einsum("hd,hld->hl", q[row].cpu().double(), keys) * scale
        out[row] = torch.einsum("hl,hld->hd", torch.softmax(scores, dim=-1), values)
    return out


def _inputs(heads, kv_heads, head_dim, block_size, context_lens=CONTEXT_LENS, dtype=torch.float32, seed=0):
    g = gen(seed)
    k_cache, v_cache, table = paged_cache(kv_heads, head_dim, block_size, context_lens, dtype, g)
    q = torch.randn(len(context_lens), heads, head_dim, generator=g).to(dtype).to(DEVICE)
    return q, k_cache, v_cache, table, torch.tensor(context_lens, device=DEVICE)


@pytest.mark.parametrize("heads,kv_heads,head_dim,block_size", ATTENTION_SHAPES)
def test_matches_the_reference_on_scattered_partial_blocks(heads, kv_heads, head_dim, block_size):
    q, k_cache, v_cache, table, lens = _inputs(heads, kv_heads, head_dim, block_size)
    scale = head_dim ** -0.5
    got = paged_decode_attention(q, k_cache, v_cache, table, lens, scale)
    torch.testing.assert_close(got.cpu().double(), _reference(q, k_cache, v_cache, table, lens, scale),
                               atol=1e-5, rtol=1e-5)
    assert torch.equal(got[CONTEXT_LENS.index(0)].cpu(), torch.zeros(heads, head_dim))  # padding row: zeros


@pytest.mark.parametrize("num_splits", [1, 3])
@pytest.mark.parametrize("heads,kv_heads,head_dim,block_size", [(9, 3, 64, 5), (8, 2, 32, 16)])
def test_small_tiles_rescale_across_tiles_that_straddle_blocks(monkeypatch, heads, kv_heads, head_dim, block_size,
                                                               num_splits):
    # 16-key tiles, as a GPU would use: each split's online softmax runs several tiles, some crossing blocks.
    monkeypatch.setattr(module, "INTERPRETED_MAX_BLOCK_N", 16)
    q, k_cache, v_cache, table, lens = _inputs(heads, kv_heads, head_dim, block_size, seed=7)
    got = paged_decode_attention(q, k_cache, v_cache, table, lens, 0.125, num_splits=num_splits)
    torch.testing.assert_close(got.cpu().double(), _reference(q, k_cache, v_cache, table, lens, 0.125),
                               atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("num_splits", [2, 3, 8])
def test_splits_merge_to_the_one_split_result(num_splits):
    # 8 splits of 61 tokens leave the short rows' later splits empty; the padding row has only empty ones.
    lens = [61, 9, 0, 33]
    q, k_cache, v_cache, table, lens_t = _inputs(9, 3, 64, 8, context_lens=lens)
    one = paged_decode_attention(q, k_cache, v_cache, table, lens_t, 0.125, num_splits=1)
    split = paged_decode_attention(q, k_cache, v_cache, table, lens_t, 0.125, num_splits=num_splits)
    torch.testing.assert_close(split, one, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(split.cpu().double(), _reference(q, k_cache, v_cache, table, lens_t, 0.125),
                               atol=1e-5, rtol=1e-5)
    assert torch.equal(split[2].cpu(), torch.zeros(9, 64))


def test_strided_q_and_out_int32_indices():
    heads, kv_heads, head_dim = 9, 3, 64
    q0, k_cache, v_cache, table, lens = _inputs(heads, kv_heads, head_dim, 16, seed=1)
    q, out, wide = strided_q_and_out(q0, kv_heads)
    got = paged_decode_attention(q, k_cache, v_cache, table.int(), lens.int(), 0.125, out, num_splits=2)
    assert got is out
    torch.testing.assert_close(out.cpu().double(), _reference(q0, k_cache, v_cache, table, lens, 0.125),
                               atol=1e-5, rtol=1e-5)
    assert torch.equal(wide[..., head_dim:].cpu(), torch.full((q0.shape[0], heads, 8), 7.0))


# The reference sees the same rounded inputs in float64; what is left is the kernel's rounding of p (to the
# input dtype for the P.V dot on a GPU) and of the output.
@pytest.mark.parametrize("dtype,tol", [(torch.float16, 3e-3), (torch.bfloat16, 2e-2)])
def test_half_precision_inputs(dtype, tol):
    q, k_cache, v_cache, table, lens = _inputs(9, 3, 64, 16, dtype=dtype, seed=2)
    got = paged_decode_attention(q, k_cache, v_cache, table, lens, 0.125, num_splits=2)
    assert got.dtype == dtype
    torch.testing.assert_close(got.cpu().double(), _reference(q, k_cache, v_cache, table, lens, 0.125),
                               atol=tol, rtol=tol)


def test_unchecked_calls_never_read_the_table_past_a_rows_context():
    q, k_cache, v_cache, table, lens = _inputs(4, 2, 32, 8, seed=3)
    want = paged_decode_attention(q, k_cache, v_cache, table, lens, 0.2)
    padded = table.clone()
    padded[:, -1] = 10 ** 6  # the unused column: out of range, refused when checked, never dereferenced
    with pytest.raises(ValueError, match="block_tables"):
        paged_decode_attention(q, k_cache, v_cache, padded, lens, 0.2)
    assert torch.equal(paged_decode_attention(q, k_cache, v_cache, padded, lens, 0.2, validate=False), want)


@pytest.mark.parametrize("field,value,message", [
    ("table", -1, "block_tables"),
    ("table", "num_blocks", "block_tables"),
    ("lens", -1, "context_lens"),
    ("lens", "capacity+1", "context_lens"),
])
def test_out_of_range_indices_are_refused(field, value, message):
    q, k_cache, v_cache, table, lens = _inputs(4, 2, 32, 8, seed=4)
    if field == "table":
        table[0, 0] = k_cache.shape[1] if value == "num_blocks" else value
    else:
        lens[1] = table.shape[1] * k_cache.shape[2] + 1 if value == "capacity+1" else value
    with pytest.raises(ValueError, match=message):
        paged_decode_attention(q, k_cache, v_cache, table, lens, 0.2)


def test_a_context_filling_the_whole_table_is_accepted():
    q, k_cache, v_cache, table, lens = _inputs(4, 2, 32, 8, context_lens=[24, 3], seed=5)
    lens[0] = table.shape[1] * k_cache.shape[2]  # every column of the row, the last one padding until now
    got = paged_decode_attention(q, k_cache, v_cache, table, lens, 0.2)
    torch.testing.assert_close(got.cpu().double(), _reference(q, k_cache, v_cache, table, lens, 0.2),
                               atol=1e-5, rtol=1e-5)


def test_bad_shapes_and_dtypes_are_refused_even_unchecked():
    q, k_cache, v_cache, table, lens = _inputs(4, 2, 32, 8, seed=6)
    cases = [
        (q.half(), k_cache, v_cache, table, lens),                     # q and cache dtypes differ
        (q[:, :3], k_cache, v_cache, table, lens),                     # 3 heads over 2 KV heads
        (q[..., :16], k_cache, v_cache, table, lens),                  # head_dim differs from the cache's
        (q, k_cache, v_cache[:1], table, lens),                        # k and v caches differ
        (q, k_cache, v_cache, table[:2], lens),                        # a row without a table
        (q, k_cache, v_cache, table.float(), lens),                    # float indices
        (q, k_cache.transpose(1, 2), v_cache.transpose(1, 2), table, lens),  # a non-contiguous cache
    ]
    for args in cases:
        with pytest.raises(ValueError):
            paged_decode_attention(*args, 0.2, validate=False)
    with pytest.raises(ValueError, match="out"):
        paged_decode_attention(q, k_cache, v_cache, table, lens, 0.2, torch.empty_like(q)[:1], validate=False)
    with pytest.raises(ValueError, match="num_splits"):
        paged_decode_attention(q, k_cache, v_cache, table, lens, 0.2, num_splits=0)


def test_default_splits_depend_on_shapes_only():
    # On a GPU: one split for short tables, more as the padded context grows, fewer as the batch fills the
    # machine, never more than MAX_SPLITS; under the interpreter always one.
    assert module.default_num_splits(8, 3, 4, 16, interpreted=False) == 1
    assert module.default_num_splits(1, 3, 256, 16, interpreted=False) == module.MAX_SPLITS
    assert module.default_num_splits(1, 3, 64, 16, interpreted=False) == 4
    assert module.default_num_splits(256, 8, 256, 16, interpreted=False) == 1
    assert module.default_num_splits(1, 3, 256, 16, interpreted=True) == 1
