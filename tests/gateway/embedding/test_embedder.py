import numpy as np
import pytest

from gateway.embedding import Embedder, EmbedderConfig


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder(EmbedderConfig())


def test_rows_are_unit_length_float32(embedder):
    vectors = embedder.embed(["What is the capital of France?", "hello"])
    assert vectors.dtype == np.float32
    assert vectors.shape == (2, embedder.dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_matches_sentence_transformers_reference(embedder):
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(embedder.config.model_path), device="cpu")
    texts = ["Is port 6379 open?", "a longer sentence about billing, invoices and refunds " * 4]
    expected = reference.encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(embedder.embed(texts), expected, atol=1e-4)


def test_batching_does_not_change_vectors(embedder):
    texts = [f"question number {i} about the weather" for i in range(7)]
    small = Embedder.__new__(Embedder)  # same model, smaller batches
    for name in ("_tokenizer", "_model", "_onnx", "_lock", "dim", "model_name", "max_seq_length"):
        setattr(small, name, getattr(embedder, name))
    small.config = EmbedderConfig(batch_size=3)
    np.testing.assert_allclose(small.embed(texts), embedder.embed(texts), atol=1e-5)
    np.testing.assert_allclose(embedder.embed_one(texts[0]), embedder.embed(texts)[0], atol=1e-5)


def test_empty_input(embedder):
    assert embedder.embed([]).shape == (0, embedder.dim)
    assert embedder.count_tokens([]) == 0


def test_count_tokens_includes_special_tokens(embedder):
    # [CLS] hello world [SEP]
    assert embedder.count_tokens(["hello world"]) == 4
    assert embedder.count_tokens(["hello world", "hello"]) == 7


def test_onnx_runtime_is_torch_float32(embedder):
    """The default runtime (ONNX Runtime) gives torch float32's vectors, one text or a padded batch."""
    assert embedder.config.runtime == "onnx"
    torch_fp32 = Embedder(EmbedderConfig(runtime="torch", dtype="float32"))
    texts = ["Is port 6379 open?", "How do I reset my password on the billing page of the console?", "hi"]
    np.testing.assert_allclose(embedder.embed(texts), torch_fp32.embed(texts), atol=1e-5)
    np.testing.assert_allclose(embedder.embed_one(texts[1]), torch_fp32.embed_one(texts[1]), atol=1e-5)


def test_onnx_export_is_made_once_and_reused(tmp_path):
    first = Embedder(EmbedderConfig(cache_dir=tmp_path))
    path = first._onnx.path
    assert path.parent == tmp_path and path.is_file()
    stamp = path.stat().st_mtime_ns
    again = Embedder(EmbedderConfig(cache_dir=tmp_path))
    assert again._onnx.path == path and path.stat().st_mtime_ns == stamp  # not exported a second time
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left behind


def test_bfloat16_stays_close_to_float32(embedder):
    fast = Embedder(EmbedderConfig(runtime="torch", dtype="bfloat16"))
    texts = ["How do I reset my password?", "Is port 6379 open?"]
    cosines = (fast.embed(texts) * embedder.embed(texts)).sum(axis=1)
    assert cosines.min() > 0.998


@pytest.mark.parametrize("field,value", [("batch_size", 0), ("num_threads", 0), ("dtype", "int4"),
                                         ("model_path", "/nonexistent"), ("device", ""), ("runtime", "tf")])
def test_bad_config_is_refused(field, value):
    with pytest.raises(ValueError, match=field):
        EmbedderConfig(**{field: value})


def test_onnx_runtime_is_cpu_only():
    with pytest.raises(ValueError, match="runtime"):
        EmbedderConfig(runtime="onnx", device="cuda")
