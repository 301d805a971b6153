"""Load-time quantizers: round-trip error bounds, and the CPU block kernel's view (blocks()) of each weight
dequantizing to exactly the dense float32 the Triton kernels are defined against."""
import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType
from gguf.quants import quantize as gguf_quantize

from workers.model import block_quant
from workers.model.quantize import quantize_int4, quantize_int8, quantize_q8_0


def _weight(n=48, k=256, seed=0) -> torch.Tensor:
    w = torch.randn(n, k, generator=torch.Generator().manual_seed(seed))
    w[3] = 0.0  # an all-zero row
    w[5] *= 1e-3  # a small-scale row beside large ones
    return w


def test_int8_round_trip_is_within_half_a_step():
    w = _weight()
    q = quantize_int8(w)
    assert q.q.dtype == torch.int8 and q.q.shape == w.shape
    assert q.scale.dtype == torch.float32 and q.scale.shape == (w.shape[0],)
    assert int(q.q.abs().max()) == 127 and bool((q.scale > 0).all())
    err = (w - q.dequantize()).abs()
    assert bool((err <= q.scale[:, None] * (0.5 + 1e-5)).all())
    assert not q.q[3].any() and not q.dequantize()[3].any()


@pytest.mark.parametrize("group_size", [32, 64, 128])
def test_int4_round_trip_is_within_half_a_step(group_size):
    w = _weight()
    q = quantize_int4(w, group_size)
    n, k = w.shape
    assert q.q.dtype == torch.uint8 and q.q.shape == (n, k // 2)
    assert q.scale.shape == q.mins.shape == (n, k // group_size) and q.group_size == group_size
    step = q.scale.repeat_interleave(group_size, dim=1)
    err = (w - q.dequantize()).abs()
    assert bool((err <= step * (0.5 + 1e-5) + 1e-6 * w.abs()).all())
    unpacked = q.unpacked()
    assert int(unpacked.max()) == 15 and int(unpacked.min()) == 0
    assert torch.equal(q.dequantize()[3], torch.zeros(k))  # a constant group is reproduced exactly


def test_int4_packs_two_weights_a_byte_low_nibble_first():
    w = torch.arange(64, dtype=torch.float32).repeat(2, 1) % 16  # q = w itself (min 0, max 15 in each group)
    q = quantize_int4(w, group_size=32)
    assert torch.equal(q.scale, torch.ones(2, 2)) and torch.equal(q.mins, torch.zeros(2, 2))
    assert int(q.q[0, 1]) == 2 | (3 << 4)  # byte 1: weight 2 low, weight 3 high
    assert torch.equal(q.dequantize(), w)


def test_int8_blocks_dequantize_exactly_as_the_weight():
    q = quantize_int8(_weight())
    blocks = q.blocks()
    assert blocks.bits == 8 and blocks.shape == q.q.shape and blocks.d.shape == (48, 256 // 32)
    assert not blocks.m.any()
    assert torch.equal(block_quant.dequantize(blocks), q.dequantize())


@pytest.mark.parametrize("group_size", [32, 128, 256])
def test_int4_blocks_dequantize_exactly_as_the_weight(group_size):
    q = quantize_int4(_weight(), group_size)
    blocks = q.blocks()
    assert blocks.bits == 4 and blocks.shape == (48, 256) and blocks.d.shape == (48, 256 // 32)
    assert torch.equal(block_quant.dequantize(blocks), q.dequantize())
    packed = block_quant.pack(blocks)  # the CPU kernel takes it as it takes a GGUF Q4_1 weight
    assert packed.bits == 4 and packed.out_features == 48


def test_half_precision_weights_quantize_from_their_float32_values():
    w = _weight().to(torch.bfloat16)
    assert torch.equal(quantize_int8(w).q, quantize_int8(w.float()).q)
    assert torch.equal(quantize_int4(w).q, quantize_int4(w.float()).q)


def test_q8_0_is_ggufs_own_quantization():
    w = _weight(n=32, k=96)
    w[7, :32] = torch.arange(-16, 16) + 0.5  # d = 127 / 127 = 1, so every q is a tie: ggml rounds away from 0
    w[7, 0] = 127.0
    raw = gguf_quantize(w.numpy(), GGMLQuantizationType.Q8_0)
    want = block_quant.decode(raw, GGMLQuantizationType.Q8_0, (32, 96))
    got = quantize_q8_0(w)
    assert got.bits == 8
    assert np.array_equal(got.q, want.q) and np.array_equal(got.d, want.d) and np.array_equal(got.m, want.m)
    assert torch.equal(block_quant.dequantize(got), block_quant.dequantize(want))


def test_bad_weights_are_refused():
    with pytest.raises(ValueError, match="2-D"):
        quantize_int8(torch.zeros(4))
    with pytest.raises(ValueError, match="2-D"):
        quantize_int4(torch.zeros(2, 4, 128))
    with pytest.raises(ValueError, match="float"):
        quantize_int8(torch.zeros(4, 32, dtype=torch.int32))
    with pytest.raises(ValueError, match="groups of 128"):
        quantize_int4(torch.zeros(4, 192))
    with pytest.raises(ValueError, match="multiple of 32"):
        quantize_int4(torch.zeros(4, 96), group_size=48)
    with pytest.raises(ValueError, match="groups of 32"):
        quantize_q8_0(torch.zeros(4, 40))
    with pytest.raises(ValueError, match="blocks of 32"):
        quantize_int8(torch.randn(4, 40)).blocks()


def test_gguf_q8_0_bytes_are_what_gguf_reads():
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize as gguf_dequantize

    from workers.model.quantize import quantize_gguf_q8_0

    w = torch.randn(32, 96, generator=torch.Generator().manual_seed(4))
    weight = quantize_gguf_q8_0(w)
    [part] = weight.parts
    assert part.qtype == "Q8_0" and part.data.shape == (32, 3 * 34)
    read = gguf_dequantize(part.data, GGMLQuantizationType.Q8_0).reshape(32, 96)
    assert np.array_equal(read, weight.dequantize().numpy())
    assert (weight.dequantize() - w).abs().max() <= w.abs().max() / 127
