"""The judge's training script stays runnable: a tiny run writes weights the serving path loads."""
import sys

import pytest

from benchmarks import train_pair_judge as training
from gateway.embedding.cross_encoder import CrossEncoder, CrossEncoderConfig, read_metadata

PAIRS = [
    {"a": "How do I boil an egg?", "b": "how to boil eggs", "label": 1},
    {"a": "How do I boil an egg?", "b": "How do I poach an egg?", "label": 0},
    {"a": "What should I pack?", "b": "What should I bring?", "label": 1,
     "a_context": [{"role": "user", "content": "I'm off to Oslo."}, {"role": "assistant", "content": "Nice."}],
     "b_context": [{"role": "user", "content": "Going to Oslo soon."}, {"role": "assistant", "content": "Fun."}]},
    {"a": "Is it open on Sunday?", "b": "Is it open on Monday?", "label": 0},
]


def test_examples_read_earlier_turns_and_both_orders():
    examples = training.examples(PAIRS[2:3])
    assert examples == [("I'm off to Oslo.\nWhat should I pack?", "Going to Oslo soon.\nWhat should I bring?", 1.0),
                        ("Going to Oslo soon.\nWhat should I bring?", "I'm off to Oslo.\nWhat should I pack?", 1.0)]


@pytest.mark.slow  # trains (tiny) and loads a cross-encoder
def test_a_tiny_run_writes_weights_the_cross_encoder_loads(tmp_path):
    base = CrossEncoderConfig().base_path
    model = training.train(PAIRS, layers=1, epochs=1, lr=1e-4, batch=4, max_length=32, seed=0, threads=1, base=base)
    out = tmp_path / "tiny.safetensors"
    training.save(model, out, {"layers": "1", "max_length": "32", "splits": "tiny"})
    assert read_metadata(out)["layers"] == "1"
    judge = CrossEncoder(CrossEncoderConfig(weights=out, cache_dir=tmp_path))
    assert judge.layers == 1 and judge.probabilities([("a b", "c d")]).shape == (1,)


@pytest.mark.parametrize("split", ["dev5", "heldout37", "test"])
def test_held_out_splits_are_refused(split, tmp_path, monkeypatch, capsys):
    # The script's own main() with its command line (in this process: a subprocess spent 1.8 s importing torch
    # for each refusal).
    monkeypatch.setattr(sys, "argv", ["train_pair_judge.py", "--splits", "dev", split,
                                      "--out", str(tmp_path / "x.safetensors")])
    with pytest.raises(SystemExit) as exited:
        training.main()
    assert exited.value.code == 2 and "held out" in capsys.readouterr().err
    assert not (tmp_path / "x.safetensors").exists()
