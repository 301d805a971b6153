"""A version's tokenizer without its weights: the gateway counts prompt tokens locally."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from workers.model.files import resolve
from workers.model.gguf_loader import read_gguf
from workers.model.tokenizer import Tokenizer


def _from_gguf(path: Path) -> Tokenizer:
    return Tokenizer.from_gguf_metadata(read_gguf(path, with_tensors=False).metadata)


LOADERS: dict[str, Callable[[Path], Tokenizer]] = {
    "gguf": _from_gguf,
    "hf": Tokenizer.from_folder,
}


def load_tokenizer(weights: str) -> Tokenizer:
    fmt, path = resolve(weights)
    return LOADERS[fmt](path)
