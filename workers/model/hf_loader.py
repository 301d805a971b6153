"""Read a Hugging Face model folder: config.json and *.safetensors, as plain dicts."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from workers.model.files import is_hf_folder


@dataclass(slots=True)
class HFCheckpoint:
    path: Path
    config: dict[str, Any]
    tensors: dict[str, torch.Tensor]  # HF names ("model.layers.0.self_attn.q_proj.weight"), float32

    @property
    def architecture(self) -> str:
        return str(self.config["model_type"])


def read_hf(path: str | Path) -> HFCheckpoint:
    path = Path(path)
    if not is_hf_folder(path):
        raise FileNotFoundError(f"{path} is not a Hugging Face model folder (no config.json)")
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no *.safetensors weights in {path}")
    config = json.loads((path / "config.json").read_text())
    tensors: dict[str, torch.Tensor] = {}
    for file in files:
        tensors.update({name: t.float() for name, t in load_file(str(file)).items()})
    return HFCheckpoint(path=path, config=config, tensors=tensors)
