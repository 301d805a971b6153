import pytest
import torch
from torch import nn

from workers.model.layers import Linear, SwiGLU
from workers.model.packed_linear import PackedLinear, can_pack, convert_for_runtime

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="needs oneDNN")


@pytest.mark.parametrize("rows", [1, 7, 32, 100])
def test_packed_linear_matches_plain_linear(rows):
    torch.manual_seed(rows)
    plain = Linear(96, 160, dtype=torch.float32)
    packed = PackedLinear(plain)
    x, residual = torch.randn(rows, 96), torch.randn(rows, 160)
    with torch.inference_mode():
        assert torch.allclose(packed(x), plain(x), atol=1e-5, rtol=1e-5)
        assert torch.allclose(packed(x, residual), plain(x, residual), atol=1e-5, rtol=1e-5)
        assert torch.allclose(packed(x.t().contiguous().t()), plain(x), atol=1e-5, rtol=1e-5)  # strided input


def test_convert_for_runtime_swaps_every_linear_in_place():
    model = nn.Sequential(SwiGLU(32, 64, dtype=torch.float32), Linear(32, 8, dtype=torch.float32))
    x = torch.randn(5, 32)
    with torch.inference_mode():
        want = model(x)
        assert can_pack(model)
        assert convert_for_runtime(model) == 3
        assert not any(isinstance(m, Linear) for m in model.modules())
        assert torch.allclose(model(x), want, atol=1e-5, rtol=1e-5)


def test_bfloat16_models_are_left_alone():
    assert not can_pack(Linear(8, 8, dtype=torch.bfloat16))
