"""A linear layer's weight kept in GGUF blocks exactly as the file stores them (Q4_0, Q4_1, Q8_0), for kernels
that read blocks directly: the GPU matmul reads these bytes as they are; the CPU kernel repacks them once."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from workers.model import block_quant


@dataclass(slots=True, frozen=True)
class GGUFPart:
    """One run of rows in one GGUF type: data [rows, row_bytes] uint8, each row cols / 32 blocks as stored."""

    data: np.ndarray
    qtype: str
    cols: int

    @property
    def rows(self) -> int:
        return self.data.shape[0]

    def decoded(self) -> block_quant.Blocks:
        return block_quant.decode(self.data, self.qtype, (self.rows, self.cols))


@dataclass(slots=True, frozen=True)
class GGUFWeight:
    """A weight [out_features, in_features] as GGUF blocks; a fused linear (q|k|v, gate|up) whose tensors differ
    in type keeps one part per type run, stacked along the rows."""

    parts: tuple[GGUFPart, ...]

    def __post_init__(self) -> None:
        if not self.parts or len({p.cols for p in self.parts}) != 1:
            raise ValueError("a GGUF weight needs parts with one column count")
        for p in self.parts:
            if p.qtype not in block_quant.FORMATS:
                raise ValueError(f"GGUF type {p.qtype} is not block-quantized")
            block_bytes = block_quant.FORMATS[p.qtype][0]
            if p.cols % block_quant.GROUP or p.data.dtype != np.uint8 or \
                    p.data.shape[1] != p.cols // block_quant.GROUP * block_bytes:
                raise ValueError(f"{p.qtype} rows of {p.cols} columns must be {p.cols // 32 * block_bytes} bytes")

    @classmethod
    def stack(cls, parts: list[GGUFPart]) -> GGUFWeight:
        """Rows of `parts` one after another, neighbours of one type merged into one part."""
        merged: list[GGUFPart] = []
        for p in parts:
            if merged and merged[-1].qtype == p.qtype:
                last = merged.pop()
                p = GGUFPart(np.concatenate([last.data, p.data]), p.qtype, p.cols)
            merged.append(p)
        return cls(tuple(merged))

    @property
    def shape(self) -> tuple[int, int]:
        return sum(p.rows for p in self.parts), self.parts[0].cols

    def blocks(self) -> block_quant.Blocks:
        return block_quant.concat([p.decoded() for p in self.parts])

    def dequantize(self) -> torch.Tensor:
        """The dense float32 weight: each block's d * q + m, as gguf dequantizes it."""
        return block_quant.dequantize(self.blocks())
