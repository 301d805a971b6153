"""The metadata-only copy of a GGUF file (the gateway image's): the same key-values and tokenizer, no tensors."""
from workers.model.gguf_loader import read_gguf
from workers.model.gguf_metadata import write_metadata_only
from workers.serve.tokenizer import load_tokenizer


def test_the_copy_keeps_every_key_value_and_the_tokenizer(gguf_path, tmp_path):
    out = write_metadata_only(gguf_path, tmp_path / "tokenizer-only.gguf")
    assert out.stat().st_mode & 0o777 == gguf_path.stat().st_mode & 0o777  # readable as the original is
    assert out.stat().st_size < gguf_path.stat().st_size / 20 and [p.name for p in tmp_path.iterdir()] == [out.name]
    original, copy = read_gguf(gguf_path, with_tensors=False), read_gguf(out)
    assert copy.tensors == {} and copy.raw == {}
    differ = {k for k in original.metadata if original.metadata[k] != copy.metadata.get(k)}
    assert differ == {"GGUF.tensor_count"} and set(copy.metadata) == set(original.metadata)
    before, after = load_tokenizer(str(gguf_path)), load_tokenizer(str(out))
    text = "Tollgate bills every token: ünïcödé, 12345 and <|im_end|>."
    assert after.encode(text) == before.encode(text) and after.chat_template == before.chat_template
    assert after.eos_token_ids == before.eos_token_ids
