"""A GGUF file's header read in one pass: its key-values as plain Python values, and each tensor's type, shape
and bytes (a view of the memory-mapped file).

Why not `gguf.GGUFReader`: it builds a numpy view of the memory map for every element of every array, and a
tokenizer's vocabulary and merges are ~98k strings: 2.7 s a read on the 2-core box, paid by every model load and
every tokenizer load (the gateway's included). Here strings are sliced from the map's bytes: ~0.1 s. The format's
constants (value types, quantization block sizes) stay the `gguf` package's; the result is the same as its
reader's (tests/workers/model/test_gguf_file.py checks it key by key and tensor by tensor on the real model).
Little-endian files only, as every published GGUF file is; a byte-swapped one is refused by name.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFValueType
from gguf.constants import GGUF_MAGIC
from gguf.quants import quant_shape_to_byte_shape

_SCALARS: dict[GGUFValueType, str] = {
    GGUFValueType.UINT8: "<B", GGUFValueType.INT8: "<b", GGUFValueType.UINT16: "<H", GGUFValueType.INT16: "<h",
    GGUFValueType.UINT32: "<I", GGUFValueType.INT32: "<i", GGUFValueType.FLOAT32: "<f", GGUFValueType.UINT64: "<Q",
    GGUFValueType.INT64: "<q", GGUFValueType.FLOAT64: "<d", GGUFValueType.BOOL: "<?",
}
# Tensor types stored as plain numbers: a view of that dtype; every other type is blocks, viewed as bytes.
_PLAIN: dict[GGMLQuantizationType, type] = {
    GGMLQuantizationType.F32: np.float32, GGMLQuantizationType.F16: np.float16, GGMLQuantizationType.F64: np.float64,
    GGMLQuantizationType.I8: np.int8, GGMLQuantizationType.I16: np.int16, GGMLQuantizationType.I32: np.int32,
    GGMLQuantizationType.I64: np.int64,
}
_DEFAULT_ALIGNMENT = 32


@dataclass(slots=True, frozen=True)
class GGUFTensor:
    name: str
    tensor_type: GGMLQuantizationType
    shape: tuple[int, ...]  # as GGUF lists it: innermost dimension first
    data: np.ndarray  # row-major: plain types as numbers, block types as bytes [rows, bytes a row]


@dataclass(slots=True, frozen=True)
class GGUFFile:
    metadata: dict[str, Any]  # "general.architecture" -> "llama"; GGUF.version, .tensor_count, .kv_count too
    tensors: list[GGUFTensor]


class _Cursor:
    """Reads values forward from a buffer."""

    def __init__(self, buf: memoryview) -> None:
        self.buf, self.at = buf, 0

    def scalar(self, fmt: str) -> Any:
        (value,) = struct.unpack_from(fmt, self.buf, self.at)
        self.at += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        n = self.scalar("<Q")
        self.at += n
        return str(self.buf[self.at - n:self.at], "utf-8")

    def value(self, kind: GGUFValueType) -> Any:
        if kind == GGUFValueType.STRING:
            return self.string()
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        if kind != GGUFValueType.ARRAY:
            raise ValueError(f"unknown GGUF value type {kind}")
        item, count = GGUFValueType(self.scalar("<I")), self.scalar("<Q")
        if item in _SCALARS:  # a run of numbers: one numpy read
            dtype = np.dtype(_SCALARS[item])
            values = np.frombuffer(self.buf, dtype=dtype, count=count, offset=self.at).tolist()
            self.at += dtype.itemsize * count
            return values
        return [self.value(item) for _ in range(count)]


def read_gguf_file(path: str | Path) -> GGUFFile:
    """The file's key-values and tensors; tensor data stays in the memory map until read."""
    mapped = np.memmap(path, mode="r")
    cursor = _Cursor(memoryview(mapped))
    if cursor.scalar("<I") != GGUF_MAGIC:
        raise ValueError(f"{path}: not a GGUF file (bad magic)")
    version = cursor.scalar("<I")
    if version & 0xFFFF == 0:
        raise ValueError(f"{path}: a big-endian GGUF file; only little-endian files are read")
    tensor_count, kv_count = cursor.scalar("<Q"), cursor.scalar("<Q")
    metadata: dict[str, Any] = {"GGUF.version": version, "GGUF.tensor_count": tensor_count, "GGUF.kv_count": kv_count}
    for _ in range(kv_count):
        key = cursor.string()
        if key in metadata:
            raise ValueError(f"{path}: key {key!r} appears twice")
        metadata[key] = cursor.value(GGUFValueType(cursor.scalar("<I")))
    infos = []
    for _ in range(tensor_count):
        name = cursor.string()
        dims = tuple(cursor.scalar("<Q") for _ in range(cursor.scalar("<I")))
        infos.append((name, dims, GGMLQuantizationType(cursor.scalar("<I")), cursor.scalar("<Q")))
    alignment = int(metadata.get("general.alignment", _DEFAULT_ALIGNMENT))
    if alignment <= 0 or alignment & (alignment - 1):
        raise ValueError(f"{path}: alignment {alignment} is not a power of two")
    start = -(-cursor.at // alignment) * alignment
    tensors, names = [], set()
    for name, dims, kind, offset in infos:
        if name in names:
            raise ValueError(f"{path}: tensor {name!r} appears twice")
        names.add(name)
        elements = int(np.prod(dims))
        rows = tuple(reversed(dims))
        if kind in _PLAIN:
            data = np.frombuffer(mapped, dtype=_PLAIN[kind], count=elements, offset=start + offset).reshape(rows)
        else:
            block, size = GGML_QUANT_SIZES[kind]
            data = np.frombuffer(mapped, dtype=np.uint8, count=elements * size // block, offset=start + offset)
            data = data.reshape(quant_shape_to_byte_shape(rows, kind))
        tensors.append(GGUFTensor(name, kind, dims, data))
    return GGUFFile(metadata, tensors)
