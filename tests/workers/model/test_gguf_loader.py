import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType

from workers.model.gguf_file import read_gguf_file
from workers.model.gguf_loader import dequantize_tensor, read_gguf
from workers.model.llama import LlamaConfig, unpermute_rotary_rows


@pytest.fixture(scope="module")
def reader(gguf_path):
    return read_gguf_file(gguf_path)  # memory-mapped: cheap, nothing dequantized yet


def _tensor(reader, name):
    return next(t for t in reader.tensors if t.name == name)


def test_metadata_gives_the_llama_hyper_parameters(reader):
    md = reader.metadata
    cfg = LlamaConfig.from_gguf(md, {t.name for t in reader.tensors})
    assert md["general.architecture"] == "llama"
    assert (cfg.num_layers, cfg.hidden_size, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim) == (30, 576, 9, 3, 64)
    assert (cfg.intermediate_size, cfg.vocab_size, cfg.max_position_embeddings) == (1536, 49152, 8192)
    assert cfg.rope_theta == 100000.0 and cfg.rms_norm_eps == pytest.approx(1e-5)
    assert cfg.tie_word_embeddings  # no output.weight: the head is the Q8_0 embedding


def test_shapes_are_row_major_out_by_in(reader):
    assert dequantize_tensor(_tensor(reader, "token_embd.weight")).shape == (49152, 576)
    assert dequantize_tensor(_tensor(reader, "blk.0.attn_k.weight")).shape == (192, 576)
    assert dequantize_tensor(_tensor(reader, "blk.0.ffn_down.weight")).shape == (576, 1536)
    norm = dequantize_tensor(_tensor(reader, "blk.0.attn_norm.weight"))
    assert norm.dtype == torch.float32 and norm.shape == (576,)


def test_q4_1_block_decodes_as_scale_times_nibble_plus_min(reader):
    t = _tensor(reader, "blk.0.attn_q.weight")
    assert t.tensor_type == GGMLQuantizationType.Q4_1
    raw = np.asarray(t.data[0, :20])  # first block of row 0: f16 d, f16 m, 16 bytes of nibbles
    d, m = raw[:4].view(np.float16).astype(np.float32)
    nibbles = np.concatenate([raw[4:] & 0x0F, raw[4:] >> 4]).astype(np.float32)  # low halves first
    expected = torch.from_numpy(d * nibbles + m)
    assert torch.allclose(dequantize_tensor(t)[0, :32], expected)


def test_q8_0_block_decodes_as_scale_times_int8(reader):
    t = _tensor(reader, "token_embd.weight")
    assert t.tensor_type == GGMLQuantizationType.Q8_0
    raw = np.asarray(t.data[7, :34])
    d = raw[:2].view(np.float16).astype(np.float32)[0]
    expected = torch.from_numpy(d * raw[2:].view(np.int8).astype(np.float32))
    assert torch.allclose(dequantize_tensor(t)[7, :32], expected)


def test_unsupported_tensor_type_is_refused_by_name():
    class Fake:
        name, tensor_type = "blk.0.x.weight", GGMLQuantizationType.Q6_K

    with pytest.raises(ValueError, match="Q6_K"):
        dequantize_tensor(Fake())


def test_unpermute_inverts_the_converters_rotary_permutation():
    heads, head_dim = 3, 8
    w = torch.randn(heads * head_dim, 5)
    # llama.cpp's convert: rows (h, pair, i) -> (h, i, pair)
    permuted = w.reshape(heads, 2, head_dim // 2, 5).transpose(1, 2).reshape(w.shape)
    assert torch.equal(unpermute_rotary_rows(permuted, heads), w)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_gguf(tmp_path / "nope.gguf")
