"""A Hugging Face folder (config.json, safetensors, tokenizer.json) loads into our Llama with HF's logits."""
import json

import pytest
import torch

from workers.model.attention import AttentionMetadata, PrefillChunk
from workers.model.hf_loader import read_hf
from workers.model.registry import load_model, resolve


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory, gguf_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    from workers.model.gguf_loader import read_gguf
    from workers.model.tokenizer import Tokenizer

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=49152, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg).eval()
    folder = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(folder, safe_serialization=True)
    tok = Tokenizer.from_gguf_metadata(read_gguf(gguf_path, with_tensors=False).metadata)
    tok.backend.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"eos_token": "<|im_end|>", "bos_token": "<|im_start|>", "chat_template": tok.chat_template}))
    return folder, model


def test_folder_is_recognised_and_read(tiny_folder):
    folder, _ = tiny_folder
    assert resolve(str(folder)) == ("hf", folder)
    ck = read_hf(folder)
    assert ck.architecture == "llama" and "lm_head.weight" in ck.tensors


def test_logits_match_transformers(tiny_folder):
    folder, hf = tiny_folder
    loaded = load_model(str(folder))
    model = loaded.model
    ids = loaded.tokenizer.apply_chat_template([{"role": "user", "content": "hello there"}])
    n = len(ids)
    cfg = model.config
    cache = torch.zeros(cfg.num_layers, cfg.num_kv_heads, 8, 16, cfg.head_dim)
    v_cache = torch.zeros_like(cache)
    meta = AttentionMetadata(slot_mapping=torch.arange(n),
                             prefills=[PrefillChunk(0, n, n, torch.arange((n + 15) // 16), None)])
    with torch.inference_mode():
        got = model(torch.tensor(ids), torch.arange(n), cache, v_cache, meta, torch.arange(n))
        want = hf(torch.tensor([ids])).logits[0]
    assert torch.allclose(got, want, atol=1e-5, rtol=0), float((got - want).abs().max())


def test_not_a_model_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="neither"):
        resolve(str(tmp_path))


def test_bfloat16_weights_stay_close_to_float32(tiny_folder):
    folder, hf = tiny_folder
    model = load_model(str(folder), dtype="bfloat16").model
    assert model.embed.weight.dtype == torch.bfloat16
    ids = list(range(100, 120))
    n, cfg = len(ids), model.config
    cache = torch.zeros(cfg.num_layers, cfg.num_kv_heads, 4, 16, cfg.head_dim, dtype=torch.bfloat16)
    v_cache = torch.zeros_like(cache)
    meta = AttentionMetadata(slot_mapping=torch.arange(n), prefills=[PrefillChunk(0, n, n, torch.arange(2), None)])
    with torch.inference_mode():
        got = model(torch.tensor(ids), torch.arange(n), cache, v_cache, meta, torch.arange(n))
        want = hf(torch.tensor([ids])).logits[0]
    assert got.dtype == torch.float32  # logits leave the model in float32 for the sampler
    assert torch.allclose(got, want, atol=5e-2, rtol=0), float((got - want).abs().max())
