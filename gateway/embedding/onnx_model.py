"""Transformer forward passes on ONNX Runtime: a model exported once to an ONNX file (about 2 s, at the first
start; kept under the cache folder, keyed by the model's files and the torch version) and run by ONNX
Runtime's CPU kernels. Two models use it: the embedder's MiniLM with mean pooling (OnnxEncoder, here) and the
semantic cache's pair judge (cross_encoder.py).

Why: a cache lookup embeds one short question, where PyTorch's eager per-op overhead is most of the time.
On the 2-core development machine one question takes ~4.8 ms here against ~9-11 ms in PyTorch bfloat16 and
~14 ms in float32 (benchmarks/semantic_cache_eval.py), and the vectors are PyTorch float32's to cosine
1.000000 (tests/gateway/embedding/test_embedder.py), so thresholds tuned on one hold on the other.

Exporting needs torch and transformers; running does not. The gateway image exports both models while it is
built (prebuild.py) into a folder named by $TOLLGATE_ONNX_PREBUILT, and ships ONNX Runtime and those files
without torch: with a prebuilt folder, the files come from it by the model's name and nothing is exported.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np


def available() -> bool:
    """ONNX Runtime and the exporter's `onnx` are installed."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx"))


def default_cache_dir() -> Path:
    """Where exported models are kept: $TOLLGATE_ONNX_CACHE, else ~/.cache/tollgate/onnx."""
    return Path(os.environ.get("TOLLGATE_ONNX_CACHE", Path.home() / ".cache" / "tollgate" / "onnx"))


def default_prebuilt_dir() -> Path | None:
    """Exports made ahead of time (prebuild.py): $TOLLGATE_ONNX_PREBUILT, else none (export at first use)."""
    value = os.environ.get("TOLLGATE_ONNX_PREBUILT")
    return Path(value) if value else None


def prebuilt_file(prebuilt: Path, stem: str) -> Path:
    """`stem`.onnx in a prebuilt folder; a folder without it is a broken build, not a reason to export."""
    path = Path(prebuilt) / f"{stem}.onnx"
    if not path.is_file():
        raise FileNotFoundError(f"no {path}: export it with `python -m gateway.embedding.prebuild {prebuilt}`"
                                " or unset TOLLGATE_ONNX_PREBUILT")
    return path


def model_key(*paths: Path) -> str:
    """Changes when any of the model's files (a folder's files, or a file) or the exporter (torch) change.
    torch's version is read from its installed metadata, the same string as torch.__version__: importing torch
    for it cost a gateway on Ray 1.4 s and ~220 MB resident at start even with every export cached (the
    pair judge loads in 0.7 s instead of 1.7 s)."""
    digest = hashlib.sha256(metadata.version("torch").encode())
    for path in paths:
        files: Iterable[Path] = sorted(path.iterdir()) if path.is_dir() else [path]
        for f in files:
            if f.is_file():
                stat = f.stat()
                digest.update(f"{f.name}:{stat.st_size}:{int(stat.st_mtime)}".encode())
    return digest.hexdigest()[:16]


@dataclass(slots=True, frozen=True)
class Graph:
    """What to export: a torch module, example inputs (int64 [batch, seq] each), their names, the output's."""

    module: Any
    example: tuple
    inputs: tuple[str, ...]
    output: str


def written_atomically(out: Path, write: Callable[[str], None]) -> Path:
    """write(path) into a temporary file beside `out`, then renamed to it, so a concurrent start never reads
    half a file."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".onnx.tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


def export(graph: Graph, out: Path) -> Path:
    """Export `graph` to `out` with batch and sequence dynamic."""
    import torch

    def write(path: str) -> None:
        with torch.inference_mode():
            torch.onnx.export(graph.module, graph.example, path, input_names=list(graph.inputs),
                              output_names=[graph.output], opset_version=17, dynamo=False,
                              dynamic_axes={**{name: {0: "batch", 1: "sequence"} for name in graph.inputs},
                                            graph.output: {0: "batch"}})

    return written_atomically(out, write)


def exported(name: str, cache_dir: Path, build: Callable[[], Graph]) -> Path:
    """The ONNX file `name` under `cache_dir`, exported from build() the first time; a read-only home (some
    containers) falls back to the temporary folder."""
    path = Path(cache_dir) / name
    if path.is_file():
        return path
    try:
        return export(build(), path)
    except OSError:
        path = Path(tempfile.gettempdir()) / "tollgate-onnx" / name
        return path if path.is_file() else export(build(), path)


def session(path: Path, threads: int):
    """An ONNX Runtime CPU session with `threads` intra-op threads and every graph optimisation."""
    import onnxruntime as ort

    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def package_name(model_path: Path) -> str:
    """A packaged model lives in <package>/model: name it after the package then."""
    return model_path.parent.name if model_path.name == "model" else model_path.name


class OnnxEncoder:
    """ids, mask [batch, seq] int64 -> mean-pooled hidden states [batch, dim] float32 (not normalised)."""

    def __init__(self, model_path: Path, cache_dir: Path, threads: int = 1, prebuilt: Path | None = None) -> None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        stem = package_name(model_path)
        if prebuilt is not None:
            self.path = prebuilt_file(prebuilt, stem)
        else:
            self.path = exported(f"{stem}-{model_key(model_path)}.onnx", cache_dir, lambda: _encoder_graph(model_path))
        self._session = session(self.path, threads)

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self._session.run(None, {"input_ids": ids, "attention_mask": mask})[0]


def _encoder_graph(model_path: Path) -> Graph:
    import torch
    from transformers import AutoModel

    # The eager attention traces the padding mask as data; the SDPA path bakes the example's shape in.
    model = AutoModel.from_pretrained(str(model_path), attn_implementation="eager").eval()
    ids = torch.tensor([[101, 2129, 2079, 1045, 2102, 102], [101, 2129, 2079, 102, 0, 0]])
    return Graph(_pooled_module()(model), (ids, (ids > 0).long()), ("input_ids", "attention_mask"), "pooled")


def _pooled_module():
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self, model) -> None:
            super().__init__()
            self.model = model

        def forward(self, ids, mask):
            hidden = self.model(input_ids=ids, attention_mask=mask,
                                token_type_ids=torch.zeros_like(ids)).last_hidden_state  # [batch, seq, dim]
            weights = mask.unsqueeze(-1).float()
            return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)

    return Pooled
