import pytest
import torch

from workers.model.layers import Linear
from workers.model.packed_linear import PackedLinear, can_pack_dense

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


def test_only_float32_cpu_weights_are_packed():
    assert can_pack_dense(Linear(8, 8, dtype=torch.float32).weight)
    assert not can_pack_dense(Linear(8, 8, dtype=torch.bfloat16).weight)
