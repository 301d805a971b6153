"""The Triton rotary + KV-cache write against layers.apply_rotary and plain indexing: GQA shapes, strided qkv
rows, scattered slots and partial blocks, padding slots that must not write. CPU tensors run under Triton's
interpreter."""
import pytest
import torch

from tests.workers.kernels.triton.support import DEVICE, gen
from workers.kernels.triton import rotary_kv as module
from workers.kernels.triton.rotary_kv import rotary_store_kv
from workers.model.layers import apply_rotary

NUM_BLOCKS, BLOCK_SIZE = 5, 4
# Tokens 1-3 fill block 4 partway, token 4 sits alone in block 0, the rest are scattered.
SLOTS = [3, 17, 18, 19, 0, 9, 11]


def _inputs(heads, kv_heads, head_dim, dtype=torch.float32, trig_dtype=None, slots=SLOTS, seed=0):
    g = gen(seed)
    tokens, width = len(slots), (heads + 2 * kv_heads) * head_dim
    qkv = (torch.randn(tokens, width + 24, generator=g) * 2).to(dtype).to(DEVICE)[:, :width]  # strided rows
    angles = torch.randn(tokens, head_dim // 2, generator=g) * 3
    cos = torch.cat([angles.cos()] * 2, dim=1).to(trig_dtype or dtype).to(DEVICE)
    sin = torch.cat([angles.sin()] * 2, dim=1).to(trig_dtype or dtype).to(DEVICE)
    # Sentinel contents, so that a stray write anywhere shows.
    k_cache = torch.randn(kv_heads, NUM_BLOCKS, BLOCK_SIZE, head_dim, generator=g).to(dtype).to(DEVICE)
    return qkv, cos, sin, torch.tensor(slots, device=DEVICE), k_cache, torch.randn_like(k_cache)


def _split(qkv, heads, kv_heads, head_dim):
    q, k, v = qkv.split([heads * head_dim, kv_heads * head_dim, kv_heads * head_dim], dim=1)
    return (t.reshape(qkv.shape[0], -1, head_dim) for t in (q, k, v))


def _run_and_check(heads, kv_heads, head_dim, slots=SLOTS, slot_dtype=torch.long, dtype=torch.float32,
                   trig_dtype=None, tol=1e-5):
    qkv, cos, sin, slots_t, k_cache, v_cache = _inputs(heads, kv_heads, head_dim, dtype, trig_dtype, slots)
    slots_t = slots_t.to(slot_dtype)
    q0, k0, v0 = (t.clone() for t in _split(qkv, heads, kv_heads, head_dim))
    k_before, v_before = k_cache.clone(), v_cache.clone()
    # The model's own rotation, in float32 then rounded once, as the kernel computes it.
    want_q = apply_rotary(q0.float(), cos.float()[:, None], sin.float()[:, None]).to(dtype)
    want_k = apply_rotary(k0.float(), cos.float()[:, None], sin.float()[:, None]).to(dtype)

    rotary_store_kv(qkv, cos, sin, slots_t, k_cache, v_cache, heads, kv_heads, head_dim)

    q, k, v = _split(qkv, heads, kv_heads, head_dim)
    torch.testing.assert_close(q, want_q, atol=tol, rtol=tol)
    torch.testing.assert_close(k, want_k, atol=tol, rtol=tol)
    assert torch.equal(v, v0)
    written = torch.tensor(slots, device=DEVICE) >= 0
    dst = slots_t[written].long()
    flat_k, flat_v = k_cache.view(kv_heads, -1, head_dim), v_cache.view(kv_heads, -1, head_dim)
    assert torch.equal(flat_k[:, dst].transpose(0, 1), k[written])  # the very values left in qkv
    assert torch.equal(flat_v[:, dst].transpose(0, 1), v0[written])
    untouched = torch.ones(NUM_BLOCKS * BLOCK_SIZE, dtype=torch.bool, device=DEVICE)
    untouched[dst] = False
    assert torch.equal(flat_k[:, untouched], k_before.view(kv_heads, -1, head_dim)[:, untouched])
    assert torch.equal(flat_v[:, untouched], v_before.view(kv_heads, -1, head_dim)[:, untouched])


@pytest.mark.parametrize("slot_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("heads,kv_heads,head_dim", [(9, 3, 64), (4, 2, 32)])
def test_rotates_q_and_k_in_place_and_writes_the_cache(heads, kv_heads, head_dim, slot_dtype):
    _run_and_check(heads, kv_heads, head_dim, slot_dtype=slot_dtype)


@pytest.mark.parametrize("heads,kv_heads,head_dim", [(9, 3, 64), (4, 2, 32)])
def test_negative_slots_are_padding_that_writes_nothing(heads, kv_heads, head_dim):
    _run_and_check(heads, kv_heads, head_dim, slots=[3, -1, 18, -7, 0, -1, 11])


def test_a_batch_of_padding_only_leaves_the_cache_alone():
    _run_and_check(4, 2, 32, slots=[-1, -1, -1])


# float16 exact to its ulp; the interpreter casts float32 to bfloat16 by truncation (the GPU rounds): 1 ulp more.
@pytest.mark.parametrize("dtype,tol", [(torch.float16, 2e-3), (torch.bfloat16, 1.6e-2)])
@pytest.mark.parametrize("trig_dtype", [None, torch.float32])
def test_low_precision_with_cos_sin_in_its_dtype_or_float32(dtype, trig_dtype, tol):
    _run_and_check(9, 3, 64, dtype=dtype, trig_dtype=trig_dtype, tol=tol)


def test_gpu_tiles_split_tokens_across_programs(monkeypatch):
    monkeypatch.setattr(module, "interpreted", lambda t: False)
    _run_and_check(9, 3, 64, slots=[3, -1, 18, 19, 0, 9, 11])


def test_slots_outside_the_cache_are_refused():
    qkv, cos, sin, _, k_cache, v_cache = _inputs(4, 2, 32, slots=[0, 1])
    for bad in ([0, NUM_BLOCKS * BLOCK_SIZE], [99, 1]):
        before = qkv.clone()
        with pytest.raises(ValueError, match="slots out of range"):
            rotary_store_kv(qkv, cos, sin, torch.tensor(bad, device=DEVICE), k_cache, v_cache, 4, 2, 32)
        assert torch.equal(qkv, before)  # refused before anything ran


def test_mismatched_inputs_are_refused():
    qkv, cos, sin, slots, k_cache, v_cache = _inputs(4, 2, 32, slots=[0, 1])
    # Shapes are checked even unvalidated (no sync); dtypes and layouts only when validating.
    with pytest.raises(ValueError, match="qkv width"):
        rotary_store_kv(qkv, cos, sin, slots, k_cache, v_cache, 4, 1, 32, validate=False)
    with pytest.raises(ValueError, match="one row per token"):
        rotary_store_kv(qkv, cos[:1], sin[:1], slots, k_cache, v_cache, 4, 2, 32, validate=False)
    with pytest.raises(ValueError, match="do not fit"):
        rotary_store_kv(qkv, cos, sin, slots, k_cache, v_cache[:, :2], 4, 2, 32, validate=False)
    with pytest.raises(ValueError, match="k_cache must be one of"):
        rotary_store_kv(qkv, cos, sin, slots, k_cache.half(), v_cache, 4, 2, 32)
    with pytest.raises(ValueError, match="slots must be one of"):
        rotary_store_kv(qkv, cos, sin, slots.float(), k_cache, v_cache, 4, 2, 32)
    with pytest.raises(ValueError, match="cos must be one of"):
        rotary_store_kv(qkv, cos.double(), sin, slots, k_cache, v_cache, 4, 2, 32)


def test_unvalidated_call_matches_the_validated_one():
    a = _inputs(9, 3, 64)
    b = tuple(t.clone() for t in a)
    rotary_store_kv(*a, 9, 3, 64)
    rotary_store_kv(*b, 9, 3, 64, validate=False)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
