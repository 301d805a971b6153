"""gguf_matmul against x @ W^T with W gguf's own dequantization of the same blocks. CPU tensors run under
Triton's interpreter."""
import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType
from gguf.quants import dequantize as gguf_dequantize
from gguf.quants import quantize as gguf_quantize

from tests.workers.kernels.triton.support import DEVICE, assert_matmul_close, gen, matmul_reference
from workers.kernels.triton import gguf_matmul as module
from workers.kernels.triton.gguf_matmul import gguf_matmul

QTYPES = ["Q8_0", "Q4_0", "Q4_1"]


def _weight(qtype: str, n: int, k: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(raw uint8 [n, k / 32 * block bytes] as the file stores it, gguf's dense float32 [n, k] of it)."""
    gtype = GGMLQuantizationType[qtype]
    w = np.random.default_rng(seed).standard_normal((n, k)).astype(np.float32)
    raw = gguf_quantize(w, gtype)
    dense = gguf_dequantize(raw, gtype).astype(np.float32).reshape(n, k)
    return torch.from_numpy(raw), torch.from_numpy(dense)


def _run(x, raw, qtype, residual=None, **kwargs):
    """gguf_matmul on DEVICE copies of CPU inputs."""
    return gguf_matmul(x.to(DEVICE), raw.to(DEVICE), qtype,
                       residual.to(DEVICE) if residual is not None else None, **kwargs)


@pytest.mark.parametrize("qtype", QTYPES)
@pytest.mark.parametrize("m,n,k", [(1, 96, 64), (5, 200, 96), (33, 64, 320), (70, 300, 64)])  # last: 2 x 2 programs
@pytest.mark.parametrize("with_residual", [False, True])
def test_float32_matches_ggufs_dequantized_weight(qtype, m, n, k, with_residual):
    raw, dense = _weight(qtype, n, k)
    x = torch.randn(m, k, generator=gen(1))
    residual = torch.randn(m, n, generator=gen(2)) if with_residual else None
    assert_matmul_close(_run(x, raw, qtype, residual), matmul_reference(x, dense, residual), torch.float32)


@pytest.mark.parametrize("qtype", QTYPES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_activations(qtype, dtype):
    raw, dense = _weight(qtype, 200, 128)
    x = torch.randn(5, 128, generator=gen(1)).to(dtype)
    residual = torch.randn(5, 200, generator=gen(2)).to(dtype)
    assert_matmul_close(_run(x, raw, qtype, residual), matmul_reference(x, dense, residual), dtype)


@pytest.mark.parametrize("qtype", QTYPES)
@pytest.mark.parametrize("m", [5, 70])  # the decode tiles, then the prefill ones
def test_gpu_tiles_split_rows_columns_and_k_across_programs(monkeypatch, qtype, m):
    monkeypatch.setattr(module, "interpreted", lambda t: False)
    raw, dense = _weight(qtype, 100, 352)  # K: 2 full 128-column tiles and a partial one (5 1/2 of 64)
    x = torch.randn(m, 352, generator=gen(1)).half()
    assert_matmul_close(_run(x, raw, qtype), matmul_reference(x, dense), torch.float16)


def test_reordered_rows_and_strided_operands():
    qtype = "Q4_1"
    raw, dense = _weight(qtype, 96, 128)
    order = torch.randperm(96, generator=gen(3))
    wide = torch.zeros(96, raw.shape[1] + 8, dtype=torch.uint8)
    wide[:, 2:2 + raw.shape[1]] = raw[order]
    wide = wide.to(DEVICE)
    raw_view = wide[:, 2:2 + raw.shape[1]]  # rows 8 bytes longer than their blocks, starting 2 bytes in
    x = torch.randn(7, 160, generator=gen(1)).to(DEVICE)[:, 16:144]  # rows 160 apart
    y = gguf_matmul(x, raw_view, qtype)
    assert_matmul_close(y, matmul_reference(x.cpu(), dense[order]), torch.float32)
    with pytest.raises(ValueError, match="even"):  # the fp16 scales are read through fp16 pointers
        gguf_matmul(x, wide[:, 3:3 + raw.shape[1]], qtype)


def test_out_and_residual_in_place_and_enum_qtype():
    raw, dense = _weight("Q8_0", 64, 64)
    x = torch.randn(3, 64, generator=gen(1))
    hidden = torch.randn(3, 64, generator=gen(2))
    want = matmul_reference(x, dense, hidden)
    hidden = hidden.to(DEVICE)
    y = gguf_matmul(x.to(DEVICE), raw.to(DEVICE), GGMLQuantizationType.Q8_0, residual=hidden, out=hidden)
    assert y is hidden
    assert_matmul_close(y, want, torch.float32)


def test_every_weight_position_lands_on_its_column():
    """One distinctive weight per row, at a column that walks every nibble and byte position of a block."""
    n, k = 64, 64
    w = np.zeros((n, k), dtype=np.float32)
    w[np.arange(n), np.arange(n) % k] = 1.0
    w[:, -1] = -1.0
    raw = gguf_quantize(w, GGMLQuantizationType.Q4_0)
    dense = torch.from_numpy(gguf_dequantize(raw, GGMLQuantizationType.Q4_0).reshape(n, k))
    x = torch.arange(k, dtype=torch.float32)[None, :].repeat(16, 1) + torch.arange(16.0)[:, None]
    assert_matmul_close(_run(x, torch.from_numpy(raw), "Q4_0"), matmul_reference(x, dense), torch.float32)


def test_bad_inputs_are_refused():
    raw, _ = _weight("Q4_0", 32, 64)
    raw = raw.to(DEVICE)
    x = torch.randn(2, 64, device=DEVICE)
    with pytest.raises(ValueError, match="bytes"):
        gguf_matmul(torch.randn(2, 96, device=DEVICE), raw, "Q4_0")
    with pytest.raises(ValueError, match="whole blocks"):
        gguf_matmul(torch.randn(2, 48, device=DEVICE), raw, "Q4_0")
    with pytest.raises(ValueError, match="bytes"):
        gguf_matmul(x, raw, "Q8_0")  # Q4_0 rows read as Q8_0: the row length does not fit
    with pytest.raises(ValueError, match="no Triton kernel"):
        gguf_matmul(x, raw, "Q5_K")
    with pytest.raises(ValueError, match="x must be one of"):
        gguf_matmul(x.to(torch.int32), raw, "Q4_0")
    with pytest.raises(ValueError, match="raw must be one of"):
        gguf_matmul(x, raw.view(torch.int8), "Q4_0")
    with pytest.raises(ValueError, match="last dimension"):
        gguf_matmul(torch.randn(64, 2, device=DEVICE).T, raw, "Q4_0")
    with pytest.raises(ValueError, match="residual must have shape"):
        gguf_matmul(x, raw, "Q4_0", residual=torch.zeros(2, 31, device=DEVICE))
    with pytest.raises(ValueError, match="out must be one of"):
        gguf_matmul(x, raw, "Q4_0", out=torch.zeros(2, 32, dtype=torch.float16, device=DEVICE))
