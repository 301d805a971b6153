"""Load-time weight forms: int8 / int4 / q8_0 quantization swaps every linear but the head for the kernel set's
module of that form, and the model still answers like float32."""
from __future__ import annotations

import pytest
import torch

from workers import LLM, SamplingParams
from workers.model.quant_linear import BlockQuantLinear
from workers.model.quantize import Int4Weight, Int8Weight
from workers.model.runtime import KEEP_DENSE, QUANTIZERS, linear_weights

pytestmark = pytest.mark.model


def _quant_quality():
    """benchmarks/quant_quality.py, whose all_logits scores every position of a prompt in one prefill."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "quant_quality.py"
    spec = importlib.util.spec_from_file_location("quant_quality", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

CHAT = [{"role": "user", "content": "What is the capital of France?"}]


def test_linear_weights_quantize_every_linear_but_the_head():
    from workers.model.layers import Linear
    from workers.model.llama import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=64, hidden_size=128, intermediate_size=256, num_layers=2, num_heads=4,
                      num_kv_heads=2, head_dim=32, rope_theta=10000.0, rms_norm_eps=1e-5,
                      max_position_embeddings=64, tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg)
    linears = {p for p, m in model.named_modules() if isinstance(m, Linear)}
    int8 = linear_weights(model, "int8", {})
    assert set(int8) == linears - set(KEEP_DENSE) and all(isinstance(w, Int8Weight) for w in int8.values())
    int4 = linear_weights(model, "int4", {})
    assert all(isinstance(w, Int4Weight) for w in int4.values())
    assert int4["layers.0.mlp.down"].group_size == 128  # 256 inputs: groups of 128
    from workers.model.runtime import quantize_int4_groupwise
    assert quantize_int4_groupwise(torch.randn(8, 576)).group_size == 64  # SmolLM2's hidden size
    with pytest.raises(ValueError, match="multiple of 32"):
        quantize_int4_groupwise(torch.randn(8, 40))
    assert linear_weights(model, None, {"x": 1}) == {"x": 1}  # GGUF blocks pass through
    with pytest.raises(ValueError, match="quantization"):
        linear_weights(model, "int2", {})
    assert set(QUANTIZERS) == {"int8", "int4", "q8_0"}


@pytest.mark.parametrize("quantization, bits", [("int8", 8), ("int4", 4)])
def test_quantized_smollm2_loads_and_serves_on_the_cpu_block_kernel(quantization, bits, model_runner):
    llm = LLM("smollm2-135m-instruct", quantization=quantization, num_kv_blocks=32)
    runner = llm.engine.runner
    blocked = [m for m in runner.model.modules() if isinstance(m, BlockQuantLinear)]
    assert len(blocked) == 4 * 30 and {m.bits for m in blocked} == {bits}
    assert not isinstance(runner.model.lm_head, BlockQuantLinear)  # the head stays dense
    [out] = llm.chat([CHAT], SamplingParams(max_tokens=8, temperature=0))
    assert out.outputs[0].finish_reason in ("stop", "length") and "Paris" in out.outputs[0].text
    # Its next-token distribution stays close to float32's on the same prompt.
    ids = runner.tokenizer.apply_chat_template(CHAT)
    all_logits = _quant_quality().all_logits
    got, want = all_logits(runner, ids)[-1], all_logits(model_runner, ids)[-1]
    assert got.argmax() == want.argmax()
    assert torch.cosine_similarity(got, want, dim=0) > (0.99 if bits == 8 else 0.95)
