"""int4_matmul against x @ W^T with W = scale * q + mins group-wise, the dense weight quantize.Int4Weight
defines. CPU tensors run under Triton's interpreter."""
import pytest
import torch

from tests.workers.kernels.triton.support import DEVICE, assert_matmul_close, gen, matmul_reference
from workers.kernels.triton import int4_matmul as module
from workers.kernels.triton.int4_matmul import int4_matmul
from workers.model.quantize import quantize_int4


def _dense(q: torch.Tensor, scale: torch.Tensor, mins: torch.Tensor, group_size: int) -> torch.Tensor:
    """The layout spelled out from the bytes: byte j of a row holds weight 2j (low nibble) and 2j + 1 (high)."""
    n = q.shape[0]
    values = torch.empty(n, q.shape[1] * 2, dtype=torch.float64)
    values[:, 0::2] = (q & 0xF).double()
    values[:, 1::2] = (q >> 4).double()
    groups = values.reshape(n, -1, group_size)
    return (scale.double()[..., None] * groups + mins.double()[..., None]).reshape(n, -1)


def _run(x, w, residual=None, **kwargs):
    """int4_matmul of DEVICE copies of CPU inputs, w an Int4Weight."""
    return int4_matmul(x.to(DEVICE), w.q.to(DEVICE), w.scale.to(DEVICE), w.mins.to(DEVICE), w.group_size,
                       residual.to(DEVICE) if residual is not None else None, **kwargs)


@pytest.mark.parametrize("m,n,k,group_size", [(1, 96, 128, 128), (5, 200, 256, 128), (33, 64, 384, 128),
                                              (5, 96, 96, 32), (2, 64, 512, 256),
                                              (70, 300, 128, 128)])  # last: 2 x 2 programs
@pytest.mark.parametrize("with_residual", [False, True])
def test_float32_matches_the_dequantized_weight(m, n, k, group_size, with_residual):
    w = quantize_int4(torch.randn(n, k, generator=gen(0)), group_size)
    x = torch.randn(m, k, generator=gen(1))
    residual = torch.randn(m, n, generator=gen(2)) if with_residual else None
    assert_matmul_close(_run(x, w, residual), matmul_reference(x, w.dequantize(), residual), torch.float32)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_activations(dtype):
    w = quantize_int4(torch.randn(200, 256, generator=gen(0)))
    x = torch.randn(5, 256, generator=gen(1)).to(dtype)
    residual = torch.randn(5, 200, generator=gen(2)).to(dtype)
    assert_matmul_close(_run(x, w, residual), matmul_reference(x, w.dequantize(), residual), dtype)


@pytest.mark.parametrize("m", [5, 70])  # the decode tiles, then the prefill ones
def test_gpu_tiles_split_rows_columns_and_k_across_programs(monkeypatch, m):
    monkeypatch.setattr(module, "interpreted", lambda t: False)
    w = quantize_int4(torch.randn(100, 384, generator=gen(0)))  # 3 groups: 3 K steps of 128, or 6 of 64
    x = torch.randn(m, 384, generator=gen(1)).half()
    assert_matmul_close(_run(x, w), matmul_reference(x, w.dequantize()), torch.float16)


def test_hand_packed_nibbles_and_strided_operands():
    q = torch.randint(0, 256, (96, 100), dtype=torch.uint8, generator=gen(0))
    scale = torch.rand(96, 3, generator=gen(1)) + 0.1
    mins = torch.randn(96, 2, generator=gen(2))
    x = torch.randn(7, 200, generator=gen(3))
    want = matmul_reference(x[:, 40:168], _dense(q[:, 4:68], scale[:, 1:3], mins, 64))
    # K = 128 in two groups of 64; q rows 100 bytes apart, scale rows 3 apart, x rows 200 apart
    y = int4_matmul(x.to(DEVICE)[:, 40:168], q.to(DEVICE)[:, 4:68], scale.to(DEVICE)[:, 1:3], mins.to(DEVICE),
                    group_size=64)
    assert_matmul_close(y, want, torch.float32)


def test_out_and_residual_in_place():
    w = quantize_int4(torch.randn(64, 128, generator=gen(0)))
    x = torch.randn(3, 128, generator=gen(1))
    hidden = torch.randn(3, 64, generator=gen(2)).to(DEVICE)
    assert _run(x, w, residual=None, out=hidden) is hidden  # out alone: overwritten with x @ W^T
    assert _run(x, w, residual=hidden, out=hidden) is hidden  # then hidden += x @ W^T, in place
    assert_matmul_close(hidden, 2 * matmul_reference(x, w.dequantize()), torch.float32)


def test_bad_inputs_are_refused():
    w = quantize_int4(torch.randn(32, 256))
    q, scale, mins = w.q.to(DEVICE), w.scale.to(DEVICE), w.mins.to(DEVICE)
    x = torch.randn(2, 256, device=DEVICE)
    with pytest.raises(ValueError, match="bytes a row"):
        int4_matmul(torch.randn(2, 128, device=DEVICE), q, scale[:, :1], mins[:, :1])
    with pytest.raises(ValueError, match="whole groups"):
        int4_matmul(torch.randn(2, 192, device=DEVICE), q, scale, mins)
    with pytest.raises(ValueError, match="multiple of 32"):
        int4_matmul(x, q, scale, mins, group_size=48)
    with pytest.raises(ValueError, match="scale must have shape"):
        int4_matmul(x, q, scale, mins, group_size=64)
    with pytest.raises(ValueError, match="mins must have shape"):
        int4_matmul(x, q, scale, mins[:16])
    with pytest.raises(ValueError, match="q must be one of"):
        int4_matmul(x, q.view(torch.int8), scale, mins)
    with pytest.raises(ValueError, match="mins must be one of"):
        int4_matmul(x, q, scale, mins.double())
    with pytest.raises(ValueError, match="out must have shape"):
        int4_matmul(x, q, scale, mins, out=torch.zeros(3, 32, device=DEVICE))
