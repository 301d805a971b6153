"""The compiled CPU kernels against plain PyTorch formulas, on random data with the shapes that break kernels:
odd row counts, strided inputs, partial last blocks, scattered block tables, GQA groups."""
import math
import os

import pytest
import torch
import torch.nn.functional as F

from workers.kernels import cpu

kernels = cpu.load()
# CI machines have gcc, so there the kernels must build and these tests always run; elsewhere a machine
# without a compiler skips them (the engine's PyTorch fallback is tested in test_cpu_build and test_llama).
pytestmark = pytest.mark.skipif(kernels is None and not os.environ.get("CI"),
                                reason="no C compiler: the PyTorch path is tested elsewhere")


def test_kernels_build_on_this_machine():
    assert kernels is not None, "the CPU kernels failed to build (see the warning logged by workers.kernels.cpu)"

ATOL = RTOL = 2e-5


@pytest.mark.parametrize("rows", [1, 5, 33])
def test_rms_norm_matches_torch_on_strided_rows(rows):
    torch.manual_seed(rows)
    base = torch.randn(rows, 200) * 3
    x = base[:, :96]  # rows 200 apart
    w = torch.randn(96)
    want = F.rms_norm(x, (96,), w, 1e-5)
    assert torch.allclose(kernels.rms_norm(x, w, 1e-5), want, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("rows", [1, 6])
def test_silu_mul_matches_torch_including_large_magnitudes(rows):
    torch.manual_seed(rows)
    gate_up = torch.randn(rows, 2 * 80) * 6
    gate_up[0, :4] = torch.tensor([-100.0, 100.0, -88.5, 0.0])
    gate, up = gate_up.split(80, dim=1)
    want = F.silu(gate) * up
    got = kernels.silu_mul(gate_up)
    assert torch.allclose(got, want, atol=ATOL, rtol=1e-5)
    assert torch.isfinite(got).all()


def _rotate_reference(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin


def test_rotary_store_kv_rotates_q_and_k_in_place_and_writes_the_cache():
    torch.manual_seed(0)
    heads, kv_heads, head_dim, num_blocks, block_size, tokens = 6, 2, 16, 5, 4, 7
    qkv = torch.randn(tokens, (heads + 2 * kv_heads) * head_dim)
    angles = torch.randn(tokens, head_dim // 2)
    cos, sin = torch.cat([angles.cos()] * 2, dim=1), torch.cat([angles.sin()] * 2, dim=1)
    slots = torch.tensor([3, 17, 0, 9, 10, 11, 19])
    k_cache = torch.zeros(kv_heads, num_blocks, block_size, head_dim)
    v_cache = torch.zeros_like(k_cache)
    q, k, v = qkv.clone().split([heads * head_dim, kv_heads * head_dim, kv_heads * head_dim], dim=1)
    want_q = _rotate_reference(q.view(tokens, heads, head_dim), cos[:, None], sin[:, None])
    want_k = _rotate_reference(k.view(tokens, kv_heads, head_dim), cos[:, None], sin[:, None])

    kernels.rotary_store_kv(qkv, cos, sin, slots, k_cache, v_cache, heads, kv_heads, head_dim)

    assert torch.allclose(qkv[:, :heads * head_dim].view(tokens, heads, head_dim), want_q, atol=ATOL)
    assert torch.allclose(qkv[:, heads * head_dim:(heads + kv_heads) * head_dim].view(tokens, kv_heads, head_dim),
                          want_k, atol=ATOL)
    flat_k, flat_v = k_cache.view(kv_heads, -1, head_dim), v_cache.view(kv_heads, -1, head_dim)
    assert torch.allclose(flat_k[:, slots].transpose(0, 1), want_k, atol=ATOL)
    assert torch.equal(flat_v[:, slots].transpose(0, 1), v.view(tokens, kv_heads, head_dim))
    untouched = torch.ones(num_blocks * block_size, dtype=torch.bool)
    untouched[slots] = False
    assert not flat_k[:, untouched].any() and not flat_v[:, untouched].any()


def test_rotary_store_kv_refuses_slots_outside_the_cache():
    qkv = torch.randn(1, 4 * 8)
    cache = torch.zeros(1, 2, 4, 8)
    trig = torch.ones(1, 8)
    with pytest.raises(ValueError, match="slots out of range"):
        kernels.rotary_store_kv(qkv, trig, trig, torch.tensor([8]), cache, cache.clone(), 2, 1, 8)


def _decode_reference(q, k_cache, v_cache, tables, lens):
    kv_heads, _, _block_size, head_dim = k_cache.shape
    group = q.shape[1] // kv_heads
    out = []
    for i, (table, n) in enumerate(zip(tables.tolist(), lens.tolist())):
        keys = k_cache[:, table].reshape(kv_heads, -1, head_dim)[:, :n]  # [KVH, n, D]
        values = v_cache[:, table].reshape(kv_heads, -1, head_dim)[:, :n]
        keys, values = keys.repeat_interleave(group, 0), values.repeat_interleave(group, 0)
        probs = torch.softmax(q[i].unsqueeze(1) @ keys.transpose(1, 2) / math.sqrt(head_dim), dim=-1)
        out.append((probs @ values).squeeze(1))
    return torch.stack(out)


@pytest.mark.parametrize("head_dim", [12, 8, 16, 48, 64, 128])  # the portable loop (12), AVX2 (8k), AVX-512 (16k)
@pytest.mark.parametrize("lens", [[1], [5, 16, 17, 40], [33, 2, 64]])
# Query heads per KV head 3 (SmolLM), 1, 4 and 8: the value pass takes up to three heads at once, so 4 and 8 leave
# a remainder; blocks of 8 never fill a run of 16 keys, blocks of 32 hold two.
@pytest.mark.parametrize("heads,kv_heads,block_size", [(9, 3, 16), (4, 4, 16), (8, 2, 8), (8, 1, 32)])
def test_paged_decode_attention_matches_dense_attention(lens, head_dim, heads, kv_heads, block_size):
    torch.manual_seed(len(lens))
    num_blocks = 12 * 16 // block_size
    k_cache = torch.randn(kv_heads, num_blocks, block_size, head_dim)
    v_cache = torch.randn_like(k_cache)
    max_blocks = -(-max(lens) // block_size)
    perm = torch.randperm(num_blocks)  # scattered, as a busy pool hands them out
    tables = torch.zeros(len(lens), max_blocks, dtype=torch.long)
    used = 0
    for i, n in enumerate(lens):
        need = -(-n // block_size)
        tables[i, :need] = perm[used:used + need]
        used = (used + need) % (num_blocks - max_blocks)
    qkv = torch.randn(len(lens), (heads + 2 * kv_heads) * head_dim)
    q = qkv[:, :heads * head_dim].view(len(lens), heads, head_dim)  # strided rows, as the model passes it
    lens_t = torch.tensor(lens)
    got = kernels.paged_decode_attention(q, k_cache, v_cache, tables, lens_t, 1 / math.sqrt(head_dim))
    want = _decode_reference(q, k_cache, v_cache, tables, lens_t)
    assert torch.allclose(got, want, atol=ATOL, rtol=RTOL)


def test_paged_decode_attention_refuses_block_ids_outside_the_pool():
    q = torch.randn(1, 2, 8)
    cache = torch.zeros(1, 2, 4, 8)
    with pytest.raises(ValueError, match="block ids out of range"):
        kernels.paged_decode_attention(q, cache, cache.clone(), torch.tensor([[2]]), torch.tensor([3]), 1.0)
    with pytest.raises(ValueError, match="context_lens"):
        kernels.paged_decode_attention(q, cache, cache.clone(), torch.tensor([[1]]), torch.tensor([5]), 1.0)


def test_wrong_dtype_is_refused():
    with pytest.raises(ValueError, match="float32"):
        kernels.silu_mul(torch.randn(2, 8, dtype=torch.bfloat16))


def _packed(qtype, rows, cols, seed):
    from gguf.quants import quantize

    from workers.model import block_quant

    raw = quantize(torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed)).numpy(), qtype)
    blocks = block_quant.decode(raw, qtype, (rows, cols))
    return block_quant.pack(blocks), block_quant.dequantize(blocks)


@pytest.mark.parametrize("qtype", ["Q4_0", "Q4_1", "Q8_0"])
@pytest.mark.parametrize("rows", [0, 1, 2, 3, 5, 7, 16, 33])
def test_block_quant_linear_matches_the_dense_matmul(qtype, rows):
    from gguf import GGMLQuantizationType

    packed, dense = _packed(GGMLQuantizationType[qtype], 48, 96, rows)
    x, residual = torch.randn(rows, 96), torch.randn(rows, 48)
    got = kernels.block_quant_linear(x, packed.q, packed.dm, packed.bits)
    assert torch.allclose(got, x @ dense.t(), atol=1e-4, rtol=1e-5)
    got = kernels.block_quant_linear(x.t().contiguous().t(), packed.q, packed.dm, packed.bits, residual)
    assert torch.allclose(got, x @ dense.t() + residual, atol=1e-4, rtol=1e-5)


def test_block_quant_linear_refuses_mismatched_inputs():
    from gguf import GGMLQuantizationType

    packed, _ = _packed(GGMLQuantizationType.Q4_1, 16, 64, 0)
    with pytest.raises(ValueError, match="columns"):
        kernels.block_quant_linear(torch.randn(2, 32), packed.q, packed.dm, packed.bits)
    with pytest.raises(ValueError, match="int8 for 8-bit"):
        kernels.block_quant_linear(torch.randn(2, 64), packed.q, packed.dm, 8)
    with pytest.raises(ValueError, match="residual"):
        kernels.block_quant_linear(torch.randn(2, 64), packed.q, packed.dm, 4, torch.randn(2, 8))


@pytest.mark.parametrize("qtype", ["Q4_1", "Q8_0"])
def test_block_quant_linear_rows_do_not_depend_on_the_batch_up_to_six(qtype):
    """A sequence verifying drafts (1 + k rows) gets exactly what one-token steps would: rows 1-6 take the
    same additions whatever their number, and a panel count not divisible by the wide kernels' is covered."""
    from gguf import GGMLQuantizationType

    packed, _ = _packed(GGMLQuantizationType[qtype], 16 * 7, 96, 3)
    x, residual = torch.randn(6, 96), torch.randn(6, 16 * 7)
    alone = torch.cat([kernels.block_quant_linear(x[i:i + 1], packed.q, packed.dm, packed.bits, residual[i:i + 1])
                       for i in range(6)])
    for m in range(2, 7):
        got = kernels.block_quant_linear(x[:m], packed.q, packed.dm, packed.bits, residual[:m])
        assert torch.equal(got, alone[:m])


@pytest.mark.parametrize("qtype", ["Q4_1", "Q8_0"])
@pytest.mark.parametrize("rows", [113, 130, 257])
def test_block_quant_linear_prefill_rows_match_the_dense_matmul_and_their_tiles_alone(qtype, rows):
    """A prefill's many rows (from 8 tiles of 16 on, split by tile rather than by panel) give the dense matmul's
    values, and each tile gives exactly what the same rows give as a call of their own (113, 130 and 257 rows: 8,
    9 and 17 tiles of 14 to 16 rows; tile t takes the rows left divided by the tiles left)."""
    from gguf import GGMLQuantizationType

    packed, dense = _packed(GGMLQuantizationType[qtype], 16 * 5, 64, rows)
    x, residual = torch.randn(rows, 64), torch.randn(rows, 16 * 5)
    got = kernels.block_quant_linear(x, packed.q, packed.dm, packed.bits, residual)
    assert torch.allclose(got, x @ dense.t() + residual, atol=1e-4, rtol=1e-5)
    tiles, r0 = -(-rows // 16), 0
    for t in range(tiles):
        n = (rows - r0) // (tiles - t)
        alone = kernels.block_quant_linear(x[r0:r0 + n], packed.q, packed.dm, packed.bits, residual[r0:r0 + n])
        assert torch.equal(got[r0:r0 + n], alone), f"tile {t} (rows {r0}..{r0 + n})"
        r0 += n
    assert r0 == rows


def _int8_reference(x: torch.Tensor, packed, dense: torch.Tensor) -> torch.Tensor:
    """w = d q + m per 32-column group: x rounded per row and group to int8 (scale max |x| / 127, round half to
    even) times d q, plus the exact x times m."""
    groups = x.view(x.shape[0], -1, 32)
    amax = groups.abs().amax(dim=2, keepdim=True)
    inverse = torch.where(amax > 0, 127 / amax, torch.zeros_like(amax))
    rounded = (torch.round(groups * inverse).clamp(-127, 127) * (amax / 127)).view_as(x).double()
    m = packed.dm[:, :, 1, :].permute(0, 2, 1).reshape(dense.shape[0], -1).repeat_interleave(32, dim=1).double()
    return rounded @ (dense.double() - m).t() + x.double() @ m.t()


int8_only = pytest.mark.skipif(kernels is None or not kernels.int8_activations,
                               reason="int8 activations need AVX-512 VNNI and VBMI")


@int8_only
@pytest.mark.parametrize("qtype", ["Q4_0", "Q4_1", "Q8_0"])
@pytest.mark.parametrize("rows", [1, 3, 8, 9, 16, 70])
def test_block_quant_linear_int8_activations_match_the_rounded_input_times_the_weight(qtype, rows):
    """With int8 activations the only rounding is x's, per row and 32 columns: the result is that rounded x times
    the dense weight (the integer sums are exact), for every row count, the prefill split (70 rows: by rows of 8)
    included, and it is close to the float32 product."""
    from gguf import GGMLQuantizationType

    packed, dense = _packed(GGMLQuantizationType[qtype], 16 * 5, 96, rows)
    x, residual = torch.randn(rows, 96), torch.randn(rows, 16 * 5)
    got = kernels.block_quant_linear(x, packed.q, packed.dm, packed.bits, residual, int8_activations=True)
    want = _int8_reference(x, packed, dense) + residual.double()
    assert torch.allclose(got.double(), want, atol=1e-4, rtol=1e-5)
    exact = x @ dense.t() + residual
    assert (got - exact).abs().max() < 0.02 * exact.abs().max()


@int8_only
@pytest.mark.parametrize("qtype", ["Q4_1", "Q8_0"])
def test_block_quant_linear_int8_rows_do_not_depend_on_the_batch(qtype):
    """A row's result is the same whatever rows share its call (decode batches, prompts run as decode tokens)."""
    from gguf import GGMLQuantizationType

    packed, _ = _packed(GGMLQuantizationType[qtype], 16 * 7, 96, 5)
    x, residual = torch.randn(80, 96), torch.randn(80, 16 * 7)
    alone = torch.cat([kernels.block_quant_linear(x[i:i + 1], packed.q, packed.dm, packed.bits, residual[i:i + 1],
                                                  int8_activations=True) for i in range(80)])
    for m in (2, 9, 17, 65, 80):
        got = kernels.block_quant_linear(x[:m], packed.q, packed.dm, packed.bits, residual[:m], int8_activations=True)
        assert torch.equal(got, alone[:m]), m
