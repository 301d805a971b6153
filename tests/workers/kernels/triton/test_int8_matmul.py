"""int8_matmul against x @ W^T with W = scale[:, None] * q, the dense weight quantize.Int8Weight defines. CPU
tensors run under Triton's interpreter."""
import pytest
import torch

from tests.workers.kernels.triton.support import DEVICE, assert_matmul_close, gen, matmul_reference
from workers.kernels.triton import int8_matmul as module
from workers.kernels.triton.int8_matmul import int8_matmul
from workers.model.quantize import quantize_int8


def _run(x, q, scale, residual=None, **kwargs):
    """int8_matmul on DEVICE copies of CPU inputs."""
    return int8_matmul(x.to(DEVICE), q.to(DEVICE), scale.to(DEVICE),
                       residual.to(DEVICE) if residual is not None else None, **kwargs)


@pytest.mark.parametrize("m,n,k", [(1, 96, 64), (5, 200, 96), (33, 64, 320), (70, 300, 64)])  # last: 2 x 2 programs
@pytest.mark.parametrize("with_residual", [False, True])
def test_float32_matches_the_dequantized_weight(m, n, k, with_residual):
    w = quantize_int8(torch.randn(n, k, generator=gen(0)))
    x = torch.randn(m, k, generator=gen(1))
    residual = torch.randn(m, n, generator=gen(2)) if with_residual else None
    assert_matmul_close(_run(x, w.q, w.scale, residual), matmul_reference(x, w.dequantize(), residual), torch.float32)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_activations(dtype):
    w = quantize_int8(torch.randn(200, 128, generator=gen(0)))
    x = torch.randn(5, 128, generator=gen(1)).to(dtype)
    residual = torch.randn(5, 200, generator=gen(2)).to(dtype)
    assert_matmul_close(_run(x, w.q, w.scale, residual), matmul_reference(x, w.dequantize(), residual), dtype)


@pytest.mark.parametrize("m", [5, 70])  # the decode tiles, then the prefill ones
def test_gpu_tiles_split_rows_columns_and_k_across_programs(monkeypatch, m):
    monkeypatch.setattr(module, "interpreted", lambda t: False)
    w = quantize_int8(torch.randn(100, 336, generator=gen(0)))  # K: 2 full 128-column tiles and a partial one
    x = torch.randn(m, 336, generator=gen(1)).half()
    assert_matmul_close(_run(x, w.q, w.scale), matmul_reference(x, w.dequantize()), torch.float16)


def test_full_int8_range_and_strided_operands():
    q = torch.randint(-128, 128, (96, 160), dtype=torch.int8, generator=gen(0))
    scale = torch.rand(96, generator=gen(1)) + 0.5
    x = torch.randn(7, 200, generator=gen(2))
    q_view, x_view = q.to(DEVICE)[:, 16:144], x.to(DEVICE)[:, 40:168]  # rows 160 and 200 apart
    want = matmul_reference(x[:, 40:168], scale[:, None] * q[:, 16:144].float())
    assert_matmul_close(int8_matmul(x_view, q_view, scale.to(DEVICE)), want, torch.float32)


def test_out_and_residual_in_place():
    w = quantize_int8(torch.randn(64, 64, generator=gen(0)))
    x = torch.randn(3, 64, generator=gen(1))
    hidden = torch.randn(3, 64, generator=gen(2))
    want = matmul_reference(x, w.dequantize(), hidden)
    hidden = hidden.to(DEVICE)
    assert int8_matmul(x.to(DEVICE), w.q.to(DEVICE), w.scale.to(DEVICE), residual=hidden, out=hidden) is hidden
    assert_matmul_close(hidden, want, torch.float32)


def test_bad_inputs_are_refused():
    w = quantize_int8(torch.randn(32, 64))
    q, scale = w.q.to(DEVICE), w.scale.to(DEVICE)
    x = torch.randn(2, 64, device=DEVICE)
    with pytest.raises(ValueError, match="columns"):
        int8_matmul(torch.randn(2, 96, device=DEVICE), q, scale)
    with pytest.raises(ValueError, match="scale has"):
        int8_matmul(x, q, scale[:16])
    with pytest.raises(ValueError, match="q must be one of"):
        int8_matmul(x, q.to(torch.int16), scale)
    with pytest.raises(ValueError, match="scale must be one of"):
        int8_matmul(x, q, scale.half())
    with pytest.raises(ValueError, match="x must be one of"):
        int8_matmul(x.to(torch.int64), q, scale)
    with pytest.raises(ValueError, match="scale must be contiguous"):
        int8_matmul(x, q, torch.randn(32, 2, device=DEVICE)[:, 0])
    with pytest.raises(ValueError, match="residual must be one of"):
        int8_matmul(x, q, scale, residual=torch.zeros(2, 32, dtype=torch.float16, device=DEVICE))
