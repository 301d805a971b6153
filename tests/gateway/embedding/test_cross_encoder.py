"""The cross-encoder: the shipped weights load, ONNX Runtime gives torch's logits, the export is made once."""
import numpy as np
import pytest
import torch

from benchmarks.semantic_cache_corpus import HELD_OUT
from gateway.embedding.cross_encoder import (DEFAULT_WEIGHTS, INPUTS, CrossEncoder, CrossEncoderConfig,
                                             build_model, read_metadata, shared)

PAIRS = [("How do I fix a leaky tap?", "how can i repair a dripping faucet"),
         ("Is it safe to give my ferret grapes?", "Is it safe to give my rabbit grapes?"),
         ("I'm learning Rust.\nHow do I read a file?", "How do I read a file in Rust?")]


@pytest.fixture(scope="module")
def encoder() -> CrossEncoder:
    return shared()


def test_shipped_weights_carry_their_shape():
    meta = read_metadata(DEFAULT_WEIGHTS)
    assert 1 <= int(meta["layers"]) <= 6 and int(meta["max_length"]) >= 64
    splits = meta["splits"].split(",")
    assert not HELD_OUT & set(splits)  # held-out splits never


@pytest.fixture(scope="module")
def float32() -> CrossEncoder:
    return CrossEncoder(CrossEncoderConfig(quantize=False))


def test_the_float32_export_gives_torch_logits(float32):
    model = build_model(float32.config.base_path, float32.layers, float32.config.weights)
    for first, second in PAIRS:
        e = float32._tokenizer.encode(first, second)
        feed = {name: torch.tensor([values]) for name, values in zip(INPUTS, (e.ids, e.attention_mask, e.type_ids))}
        with torch.inference_mode():
            expected = model(**feed).logits[0, 0].item()
        assert float32.logits([(first, second)])[0] == pytest.approx(expected, abs=1e-4)


def test_int8_stays_close_to_float32(encoder, float32):
    """The served (int8) judge is the trained one to within a small shift of the logit."""
    assert encoder.config.quantize and encoder.path != float32.path
    np.testing.assert_allclose(encoder.logits(PAIRS), float32.logits(PAIRS), atol=0.5)


def test_probabilities_are_the_logits_squashed(encoder):
    logits, probabilities = encoder.logits(PAIRS), encoder.probabilities(PAIRS)
    assert probabilities.shape == (3,) and np.all((probabilities > 0) & (probabilities < 1))
    np.testing.assert_allclose(probabilities, 1 / (1 + np.exp(-logits)), rtol=1e-6)
    assert encoder.probabilities([]).shape == (0,)


def test_export_is_made_once_and_reused(tmp_path):
    first = CrossEncoder(CrossEncoderConfig(cache_dir=tmp_path))
    stamps = {f.name: f.stat().st_mtime_ns for f in tmp_path.iterdir()}
    assert len(stamps) == 2 and first.path.name.endswith("-int8.onnx")  # the export and its int8 copy
    again = CrossEncoder(CrossEncoderConfig(cache_dir=tmp_path))
    assert again.path == first.path and {f.name: f.stat().st_mtime_ns for f in tmp_path.iterdir()} == stamps


def test_a_long_pair_is_truncated_not_refused(encoder):
    long = "why " * 400
    assert encoder.probabilities([(long, long)]).shape == (1,)


def test_bad_config_is_refused(tmp_path):
    with pytest.raises(ValueError, match="weights"):
        CrossEncoderConfig(weights=tmp_path / "missing.safetensors")
    with pytest.raises(ValueError, match="threads"):
        CrossEncoderConfig(threads=0)


def test_weights_for_another_model_are_refused(tmp_path):
    from safetensors.torch import save_file

    path = tmp_path / "odd.safetensors"
    save_file({"not.a.tensor.of.bert": torch.zeros(2)}, str(path), metadata={"layers": "1", "max_length": "32"})
    with pytest.raises(ValueError, match="tensors the model lacks"):
        build_model(CrossEncoderConfig().base_path, 1, path)
