"""Read a GGUF file: its metadata as plain Python values and its tensors dequantized to torch."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from gguf import GGMLQuantizationType
from gguf.quants import dequantize

from workers.model.gguf_file import GGUFTensor, read_gguf_file

if TYPE_CHECKING:  # torch only to dequantize: metadata alone (a tokenizer's, on the gateway) reads without it
    import torch

# Tensor types we turn into float32. Anything else is refused by name rather than guessed at.
SUPPORTED_TYPES = frozenset({
    GGMLQuantizationType.F32,
    GGMLQuantizationType.F16,
    GGMLQuantizationType.BF16,
    GGMLQuantizationType.Q8_0,
    GGMLQuantizationType.Q4_0,
    GGMLQuantizationType.Q4_1,
})

_QUANTIZED = SUPPORTED_TYPES - {GGMLQuantizationType.F32, GGMLQuantizationType.F16, GGMLQuantizationType.BF16}


@dataclass(slots=True)
class RawTensor:
    """A quantized tensor's bytes as stored (a view of the memory-mapped file), for kernels that read blocks."""

    qtype: GGMLQuantizationType
    data: np.ndarray
    shape: tuple[int, ...]  # row-major, as `tensors` has it


@dataclass(slots=True)
class GGUFCheckpoint:
    path: Path
    metadata: dict[str, Any]         # "llama.block_count" -> 30, "tokenizer.ggml.tokens" -> [...]
    tensors: dict[str, torch.Tensor]  # GGUF names ("blk.0.attn_q.weight"), float32, [out, in] for matrices
    raw: dict[str, RawTensor] = field(default_factory=dict)  # the quantized ones, undecoded

    @property
    def architecture(self) -> str:
        return str(self.metadata["general.architecture"])


def dequantize_tensor(tensor: GGUFTensor) -> torch.Tensor:
    """One reader tensor to float32 torch, in row-major [rows, cols] order (GGUF lists shapes reversed)."""
    import torch

    if tensor.tensor_type not in SUPPORTED_TYPES:
        raise ValueError(f"tensor {tensor.name}: unsupported GGUF type {tensor.tensor_type.name}")
    array = dequantize(tensor.data, tensor.tensor_type).astype(np.float32, copy=False)
    shape = tuple(int(d) for d in reversed(tensor.shape))
    if not array.flags.writeable:  # F32/F16 data is a read-only view of the memory-mapped file
        array = array.copy()
    return torch.from_numpy(np.ascontiguousarray(array).reshape(shape))


def read_gguf(path: str | Path, *, with_tensors: bool = True) -> GGUFCheckpoint:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no GGUF file at {path}")
    file = read_gguf_file(path)
    tensors = {t.name: dequantize_tensor(t) for t in file.tensors} if with_tensors else {}
    raw = {t.name: RawTensor(t.tensor_type, t.data, tuple(reversed(t.shape)))
           for t in file.tensors if t.tensor_type in _QUANTIZED}
    return GGUFCheckpoint(path=path, metadata=file.metadata, tensors=tensors, raw=raw)
