"""The embedder's forward pass on ONNX Runtime: the packaged MiniLM exported once to an ONNX file (about 2 s,
at the first start; kept under the cache folder, keyed by the model's files and the torch version) and run
by ONNX Runtime's CPU kernels.

Why: a cache lookup embeds one short question, where PyTorch's eager per-op overhead is most of the time.
On the 2-core development machine one question takes ~4.8 ms here against ~9-11 ms in PyTorch bfloat16 and
~14 ms in float32 (benchmarks/semantic_cache_eval.py), and the vectors are PyTorch float32's to cosine
1.000000 (tests/gateway/embedding/test_embedder.py), so thresholds tuned on one hold on the other.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np


def available() -> bool:
    """ONNX Runtime and the exporter's `onnx` are installed."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx"))


def model_key(model_path: Path) -> str:
    """Changes when the model's files or the exporter (torch) change."""
    import torch

    digest = hashlib.sha256(torch.__version__.encode())
    for f in sorted(model_path.iterdir()):
        if f.is_file():
            stat = f.stat()
            digest.update(f"{f.name}:{stat.st_size}:{int(stat.st_mtime)}".encode())
    return digest.hexdigest()[:16]


def export(model_path: Path, out: Path) -> Path:
    """Export the transformer plus masked mean pooling to `out` (written to a temporary file, then renamed,
    so a concurrent start never reads half a file)."""
    import torch
    from transformers import AutoModel

    # The eager attention traces the padding mask as data; the SDPA path bakes the example's shape in.
    model = AutoModel.from_pretrained(str(model_path), attn_implementation="eager").eval()
    ids = torch.tensor([[101, 2129, 2079, 1045, 2102, 102], [101, 2129, 2079, 102, 0, 0]])
    mask = (ids > 0).long()
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".onnx.tmp")
    os.close(fd)
    try:
        with torch.inference_mode():
            torch.onnx.export(_Pooled(model), (ids, mask), tmp, input_names=["input_ids", "attention_mask"],
                              output_names=["pooled"], opset_version=17, dynamo=False,
                              dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                                            "attention_mask": {0: "batch", 1: "sequence"},
                                            "pooled": {0: "batch"}})
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


class OnnxEncoder:
    """ids, mask [batch, seq] int64 -> mean-pooled hidden states [batch, dim] float32 (not normalised)."""

    def __init__(self, model_path: Path, cache_dir: Path, threads: int = 1) -> None:
        import onnxruntime as ort

        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        path = Path(cache_dir) / f"{model_path.parent.name if model_path.name == 'model' else model_path.name}-" \
                                  f"{model_key(model_path)}.onnx"
        if not path.is_file():
            try:
                export(model_path, path)
            except OSError:  # a read-only home (some containers): the temporary folder then
                path = Path(tempfile.gettempdir()) / "tollgate-onnx" / path.name
                if not path.is_file():
                    export(model_path, path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.path = path
        self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self._session.run(None, {"input_ids": ids, "attention_mask": mask})[0]


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


def _Pooled(model):  # noqa: N802 (a class made on demand: torch is imported only when exporting)
    return _pooled_module()(model)
