"""The Triton silu(gate) * up against plain PyTorch, including gates large enough to overflow a naive exp.
CPU tensors run under Triton's interpreter."""
import pytest
import torch
import torch.nn.functional as F

from tests.workers.kernels.triton.support import DEVICE, gen
from workers.kernels.triton import silu_mul as module
from workers.kernels.triton.silu_mul import silu_mul


def _reference(gate_up):
    gate, up = gate_up.float().chunk(2, dim=-1)
    return F.silu(gate) * up


def _gate_up(rows, inter, dtype=torch.float32, seed=0):
    gate_up = torch.randn(rows, 2 * inter, generator=gen(seed)) * 6
    gate_up[0, :4] = torch.tensor([-100.0, 100.0, -88.5, 0.0])
    return gate_up.to(dtype).to(DEVICE)


@pytest.mark.parametrize("inter", [80, 200, 1536])
@pytest.mark.parametrize("rows", [1, 6, 33])
def test_silu_mul_matches_torch_including_large_magnitudes(rows, inter):
    gate_up = _gate_up(rows, inter, seed=rows)
    got = silu_mul(gate_up)
    assert got.shape == (rows, inter) and got.dtype == torch.float32
    torch.testing.assert_close(got, _reference(gate_up), atol=1e-5, rtol=1e-5)
    assert torch.isfinite(got).all()


@pytest.mark.parametrize("dtype,rtol,atol", [(torch.float16, 2e-3, 2e-3), (torch.bfloat16, 1.6e-2, 1e-2)])
def test_low_precision_computes_in_float32(dtype, rtol, atol):
    gate_up = _gate_up(5, 200, dtype, seed=1)
    got = silu_mul(gate_up)
    assert got.dtype == dtype and torch.isfinite(got).all()
    # One rounding of the float32 result (the interpreter truncates bfloat16: up to an ulp more).
    torch.testing.assert_close(got, _reference(gate_up).to(dtype), rtol=rtol, atol=atol)


def test_gpu_tiles_split_columns_across_programs(monkeypatch):
    monkeypatch.setattr(module, "interpreted", lambda t: False)
    gate_up = _gate_up(3, 1100, seed=2)  # two 1024-column blocks, the second partial
    torch.testing.assert_close(silu_mul(gate_up), _reference(gate_up), atol=1e-5, rtol=1e-5)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="odd"):
        silu_mul(torch.randn(2, 7, device=DEVICE))
    with pytest.raises(ValueError, match="contiguous"):
        silu_mul(torch.randn(8, 4, device=DEVICE)[::2])
    with pytest.raises(ValueError, match="gate_up must be one of"):
        silu_mul(torch.ones(2, 8, dtype=torch.int64, device=DEVICE))
