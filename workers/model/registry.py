"""Model loading: file formats -> readers, architectures -> model classes (where the files are: files.py)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from workers.model.files import CATALOGUE, PackagedFile, resolve  # noqa: F401 (imported from here too)
from workers.model.kernel_sets.registry import attach
from workers.model.kernel_sets.torch_set import TorchKernels
from workers.model.llama import LlamaForCausalLM
from workers.model.tokenizer import Tokenizer


# general.architecture (GGUF) / model_type (HF config.json) -> model class with from_gguf / from_hf.
# Each architecture is a causal LM with LlamaForCausalLM's interface (from_gguf, from_hf, the KV geometry).
ARCHITECTURES: dict[str, type[LlamaForCausalLM]] = {
    "llama": LlamaForCausalLM,
}

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(slots=True)
class LoadedModel:
    model: LlamaForCausalLM   # forward(input_ids, positions, k_cache, v_cache, meta, logits_indices); PyTorch ops
    tokenizer: Tokenizer
    source: Path
    # Module path -> its weight as GGUF blocks as stored (workers.model.gguf_weight), when asked for and the
    # file has them. The dense model holds the same values, dequantized.
    gguf_weights: dict[str, object] = field(default_factory=dict)


def _architecture(name: str) -> type[LlamaForCausalLM]:
    if name not in ARCHITECTURES:
        raise ValueError(f"unsupported architecture {name!r}; supported: {sorted(ARCHITECTURES)}")
    return ARCHITECTURES[name]


def _load_gguf(path: Path, dtype: torch.dtype, gguf_weights: bool) -> LoadedModel:
    from workers.model.gguf_loader import read_gguf  # the gguf package: only for GGUF files

    ck = read_gguf(path)
    cls = _architecture(ck.architecture)
    model = cls.from_gguf(ck, dtype)
    blocks: dict[str, object] = {**cls.gguf_weights(ck)} if gguf_weights else {}
    return LoadedModel(model=model, tokenizer=Tokenizer.from_gguf_metadata(ck.metadata), source=path,
                       gguf_weights=blocks)


def _load_hf(path: Path, dtype: torch.dtype, gguf_weights: bool) -> LoadedModel:
    # safetensors hold dense weights: there are no blocks to keep, whatever `gguf_weights` asks.
    from workers.model.hf_loader import read_hf

    ck = read_hf(path)
    model = _architecture(ck.architecture).from_hf(ck, dtype)
    return LoadedModel(model=model, tokenizer=Tokenizer.from_folder(path), source=path)


FORMATS: dict[str, Callable[[Path, torch.dtype, bool], LoadedModel]] = {
    "gguf": _load_gguf,
    "hf": _load_hf,
}


def load_model(model: str, dtype: str = "float32", *, gguf_weights: bool = False) -> LoadedModel:
    """On the CPU, running PyTorch ops. gguf_weights: also return the linears' GGUF blocks as stored."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    fmt, path = resolve(model)
    with torch.device("cpu"):
        loaded = FORMATS[fmt](path, DTYPES[dtype], gguf_weights)
    attach(loaded.model, TorchKernels("cpu"))
    return loaded
