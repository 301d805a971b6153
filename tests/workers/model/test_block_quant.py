"""GGUF blocks decoded and packed for the kernel: the values must be gguf's own dequantization, bit for bit."""
import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType
from gguf.quants import dequantize as gguf_dequantize
from gguf.quants import quantize as gguf_quantize

from workers.model import block_quant

FORMATS = [GGMLQuantizationType.Q4_0, GGMLQuantizationType.Q4_1, GGMLQuantizationType.Q8_0]


def _raw(qtype, rows=32, cols=96, seed=0):
    weights = np.random.default_rng(seed).standard_normal((rows, cols)).astype(np.float32)
    return gguf_quantize(weights, qtype)


@pytest.mark.parametrize("qtype", FORMATS)
def test_decoded_blocks_are_ggufs_dequantization_exactly(qtype):
    raw = _raw(qtype)
    blocks = block_quant.decode(raw, qtype, (32, 96))
    assert blocks.bits == (8 if qtype == GGMLQuantizationType.Q8_0 else 4)
    want = gguf_dequantize(raw, qtype).astype(np.float32).reshape(32, 96)
    assert np.array_equal(block_quant.dequantize(blocks).numpy(), want)


def test_real_model_tensors_decode_to_the_loaders_dense_weights(gguf_path):
    from workers.model.gguf_loader import read_gguf

    ck = read_gguf(gguf_path)
    for name in ("blk.0.attn_q.weight", "blk.7.ffn_down.weight", "token_embd.weight"):
        raw = ck.raw[name]
        dense = block_quant.dequantize(block_quant.decode(raw.data, raw.qtype, raw.shape))
        assert torch.equal(dense, ck.tensors[name]), name


def test_pack_layout_holds_every_value_where_the_kernel_reads_it():
    qtype = GGMLQuantizationType.Q4_1
    blocks = block_quant.decode(_raw(qtype), qtype, (32, 96))
    packed = block_quant.pack(blocks)
    assert packed.q.shape == (2, 96, 8) and packed.q.dtype == torch.uint8
    assert packed.dm.shape == (2, 3, 2, 16)
    panel, row, col = 1, 11, 40  # row 11 of panel 1: high nibble of byte 3
    assert int(packed.q[panel, col, 3]) >> 4 == blocks.q[16 + row, col]
    assert float(packed.dm[panel, col // 32, 0, row]) == blocks.d[16 + row, col // 32]
    assert float(packed.dm[panel, col // 32, 1, row]) == blocks.m[16 + row, col // 32]


def test_concat_widens_four_bits_beside_eight_and_keeps_row_order():
    q4 = block_quant.decode(_raw(GGMLQuantizationType.Q4_1, rows=16), GGMLQuantizationType.Q4_1, (16, 96))
    q8 = block_quant.decode(_raw(GGMLQuantizationType.Q8_0, rows=16, seed=1), GGMLQuantizationType.Q8_0, (16, 96))
    both = block_quant.concat([q4, q8])
    assert both.bits == 8 and both.shape == (32, 96)
    dense = block_quant.dequantize(both)
    assert torch.equal(dense[:16], block_quant.dequantize(q4))
    assert torch.equal(dense[16:], block_quant.dequantize(q8))
    assert block_quant.pack(both).q.dtype == torch.int8


def test_shapes_the_kernel_cannot_tile_are_refused():
    qtype = GGMLQuantizationType.Q8_0
    blocks = block_quant.decode(_raw(qtype, rows=8), qtype, (8, 96))
    assert not block_quant.can_pack(blocks)
    with pytest.raises(ValueError, match="panels"):
        block_quant.pack(blocks)
    with pytest.raises(ValueError, match="blocks of 32"):
        block_quant.decode(np.zeros(40, dtype=np.uint8), qtype, (1, 40))
    with pytest.raises(ValueError, match="no block-quantized kernel"):
        block_quant.decode(np.zeros(4, dtype=np.uint8), GGMLQuantizationType.F16, (1, 2))
