"""The Triton RMSNorm against plain PyTorch: odd row counts and widths, strided rows, the fused residual add,
and the rounding of layers.RMSNorm in float16/bfloat16. CPU tensors run under Triton's interpreter."""
import pytest
import torch
import torch.nn.functional as F

from tests.workers.kernels.triton.support import DEVICE, gen
from workers.kernels.triton import rms_norm as module
from workers.kernels.triton.rms_norm import rms_norm

EPS = 1e-5


def _reference(x, weight, eps=EPS):
    """layers.RMSNorm: normalise in float32, round to x's dtype, then scale by the weight."""
    x32 = x.float()
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x32.to(x.dtype)


def _strided(rows, dim, dtype=torch.float32, seed=0):
    g = gen(seed)
    base = torch.randn(rows, dim + 40, generator=g) * 3  # rows dim + 40 apart
    return base.to(dtype).to(DEVICE)[:, :dim]


@pytest.mark.parametrize("dim", [96, 576, 200])
@pytest.mark.parametrize("rows", [1, 5, 33])
def test_rms_norm_matches_torch_on_strided_rows(rows, dim):
    x = _strided(rows, dim, seed=rows)
    w = torch.randn(dim, device=DEVICE)
    got = rms_norm(x, w, EPS)
    assert got.shape == (rows, dim) and got.is_contiguous()
    torch.testing.assert_close(got, F.rms_norm(x, (dim,), w, EPS), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("rows", [1, 5, 33])
def test_fused_residual_add_returns_the_norm_and_the_sum(rows):
    x = _strided(rows, 200, seed=rows)
    residual = _strided(rows, 200, seed=rows + 100)
    w = torch.randn(200, device=DEVICE)
    x_before, residual_before = x.clone(), residual.clone()
    out, h = rms_norm(x, w, EPS, residual)
    torch.testing.assert_close(h, x + residual, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(out, F.rms_norm(x + residual, (200,), w, EPS), atol=1e-5, rtol=1e-5)
    assert torch.equal(x, x_before) and torch.equal(residual, residual_before)


# The interpreter casts float32 to bfloat16 by truncation (the GPU rounds to nearest), so allow 2 ulps there.
LOW = [(torch.float16, 2e-3, 1e-3), (torch.bfloat16, 1.6e-2, 1e-2)]


@pytest.mark.parametrize("dtype,rtol,atol", LOW)
@pytest.mark.parametrize("rows", [1, 33])
def test_low_precision_matches_the_layer_rounding(rows, dtype, rtol, atol):
    x = _strided(rows, 576, dtype, seed=rows)
    w = torch.randn(576).to(dtype).to(DEVICE)
    got = rms_norm(x, w, EPS)
    assert got.dtype == dtype
    torch.testing.assert_close(got, _reference(x, w), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype,rtol,atol", LOW)
def test_low_precision_fused_residual(dtype, rtol, atol):
    x, residual = _strided(5, 96, dtype, seed=1), _strided(5, 96, dtype, seed=2)
    w = torch.randn(96).to(dtype).to(DEVICE)
    out, h = rms_norm(x, w, EPS, residual)
    assert out.dtype == h.dtype == dtype
    torch.testing.assert_close(h, x + residual, rtol=rtol, atol=atol)
    torch.testing.assert_close(out, _reference(x + residual, w), rtol=rtol, atol=atol)


@pytest.mark.parametrize("residual", [False, True])
def test_one_row_per_program_as_on_the_gpu(monkeypatch, residual):
    monkeypatch.setattr(module, "interpreted", lambda t: False)
    x, r, w = _strided(5, 200, seed=3), _strided(5, 200, seed=4), torch.randn(200, device=DEVICE)
    if residual:
        out, h = rms_norm(x, w, EPS, r)
        torch.testing.assert_close(h, x + r, atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(out, F.rms_norm(x + r, (200,), w, EPS), atol=1e-5, rtol=1e-5)
    else:
        torch.testing.assert_close(rms_norm(x, w, EPS), F.rms_norm(x, (200,), w, EPS), atol=1e-5, rtol=1e-5)


def test_mismatched_inputs_are_refused():
    x = torch.randn(3, 8, device=DEVICE)
    with pytest.raises(ValueError, match="weight has 4 elements"):
        rms_norm(x, torch.ones(4, device=DEVICE), EPS)
    with pytest.raises(ValueError, match="residual has shape"):
        rms_norm(x, torch.ones(8, device=DEVICE), EPS, torch.randn(2, 8, device=DEVICE))
    with pytest.raises(ValueError, match="residual must be one of"):
        rms_norm(x, torch.ones(8, device=DEVICE), EPS, torch.randn(3, 8, device=DEVICE, dtype=torch.float16))
    with pytest.raises(ValueError, match="x must be one of"):
        rms_norm(x.to(torch.int32), torch.ones(8, device=DEVICE), EPS)
    with pytest.raises(ValueError, match="last dimension"):
        rms_norm(x.t(), torch.ones(3, device=DEVICE), EPS)
