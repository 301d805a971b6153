"""Export the gateway's two ONNX models ahead of time into one folder, for a gateway that runs without torch
(the gateway image: its build stage runs this, its final stage has ONNX Runtime, these files and no torch):
    python -m gateway.embedding.prebuild /opt/tollgate/onnx
    TOLLGATE_ONNX_PREBUILT=/opt/tollgate/onnx tollgate serve
The folder holds the embedder (`<model>.onnx`) and the int8 pair judge (`<model>-<weights>-int8.onnx`), the
files the first start would otherwise export into the cache (onnx_model.py). It then loads both from the folder
and checks them against the cache's exports, so a broken folder fails the image build, not its first request.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from gateway.embedding.cross_encoder import CrossEncoder, CrossEncoderConfig, export_stem
from gateway.embedding.embedder import Embedder, EmbedderConfig
from gateway.embedding.onnx_model import package_name

CHECK_TEXTS = ["Is port 6379 open?", "How do I reset my password on the billing page of the console?"]
CHECK_PAIRS = [("How do I fix a leaky tap?", "how can i repair a dripping faucet")]


def prebuild(out: Path) -> list[Path]:
    """Export the embedder and the int8 judge into `out` (made if missing); the files written."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as cache:
        embedder = Embedder(EmbedderConfig(cache_dir=Path(cache), prebuilt=None))
        judge = CrossEncoder(CrossEncoderConfig(cache_dir=Path(cache), prebuilt=None))
        files = [shutil.copyfile(embedder._onnx.path, out / f"{package_name(embedder.config.model_path)}.onnx"),
                 shutil.copyfile(judge.path, out / f"{export_stem(judge.config.base_path, judge.config.weights)}"
                                                   "-int8.onnx")]
        _check(out, embedder, judge)
    return [Path(f) for f in files]


def _check(out: Path, embedder: Embedder, judge: CrossEncoder) -> None:
    """The folder's models give what the freshly exported ones give."""
    again = Embedder(EmbedderConfig(prebuilt=out))
    np.testing.assert_allclose(again.embed(CHECK_TEXTS), embedder.embed(CHECK_TEXTS), atol=1e-6)
    again_judge = CrossEncoder(CrossEncoderConfig(prebuilt=out))
    np.testing.assert_allclose(again_judge.logits(CHECK_PAIRS), judge.logits(CHECK_PAIRS), atol=1e-6)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m gateway.embedding.prebuild OUT_DIR")
    for path in prebuild(Path(sys.argv[1])):
        print(f"{path} ({path.stat().st_size / 1e6:.1f} MB)")
