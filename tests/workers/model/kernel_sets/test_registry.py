"""Which kernel set an engine runs: chosen once from the device, the dtype and EngineConfig.kernels."""
from __future__ import annotations

import pytest
import torch

from workers.config import EngineConfig
from workers.model.kernel_sets import registry
from workers.model.kernel_sets.torch_set import TorchKernels


@pytest.mark.parametrize("device, dtype, want", [
    ("cuda", "float32", "triton"), ("cuda", "bfloat16", "triton"),
    ("cpu", "float32", "cpu"), ("cpu", "bfloat16", "torch"),
])
def test_auto_is_triton_on_cuda_c_kernels_for_float32_on_cpu_else_torch(device, dtype, want):
    assert registry.resolve("auto", torch.device(device), dtype) == want


def test_explicit_choices_win_and_wrong_ones_are_refused():
    assert registry.resolve("torch", torch.device("cpu"), "float32") == "torch"
    with pytest.raises(ValueError, match="CPU"):
        registry.select("cpu", "cuda", "float32")
    with pytest.raises(ValueError, match="float32"):
        registry.select("cpu", "cpu", "bfloat16")
    with pytest.raises(ValueError, match="kernels must be"):
        registry.select("cuda-graphs", "cpu", "float32")


def test_triton_on_the_cpu_needs_the_interpreter(monkeypatch):
    from workers.kernels.triton import common

    monkeypatch.setattr(common, "interpreter_enabled", lambda: False)
    with pytest.raises(ValueError, match="TRITON_INTERPRET"):
        registry.select("triton", "cpu", "float32")
    monkeypatch.setattr(common, "interpreter_enabled", lambda: True)
    assert registry.select("triton", "cpu", "float32").name == "triton"


def test_engine_config_device_defaults_to_what_torch_sees():
    assert EngineConfig().device == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="device"):
        EngineConfig(device="tpu")
    with pytest.raises(ValueError, match="kernels"):
        EngineConfig(kernels="fast")
    with pytest.raises(ValueError, match="quantization"):
        EngineConfig(quantization="int3")
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        EngineConfig(gpu_memory_utilization=1.5)


def test_attach_points_every_layer_at_one_set():
    from workers.model.llama import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_layers=2, num_heads=4,
                      num_kv_heads=2, head_dim=8, rope_theta=10000.0, rms_norm_eps=1e-5,
                      max_position_embeddings=64, tie_word_embeddings=True)
    model = LlamaForCausalLM(cfg)
    ks = TorchKernels("cpu")
    # the model, per layer two norms + attention + mlp, and the final norm
    assert registry.attach(model, ks) == 1 + 2 * 4 + 1
    assert all(m.kernels is ks for m in model.modules() if hasattr(m, "kernels"))
