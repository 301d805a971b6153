"""Block-quantized weights: GGUF's Q4_0, Q4_1 and Q8_0 blocks, decoded and repacked for the CPU kernel.

Every one of these formats is w = d * q + m for each row and 32-column group (Q4_1: q in 0..15; Q4_0:
q in 0..15 with m = -8 d; Q8_0: q in -128..127 with m = 0). The kernel (workers/kernels/cpu_qlinear.c)
reads that form directly, so the model's matmuls stream 5-9 bits a weight instead of 32, and still compute
on exactly the float32 values the dense path would (see `dequantize`, which the tests hold to gguf's own).

Layout: rows in panels of 16. 4 bits: q [N/16, K, 8] uint8, byte j of column k holding panel row j (low
nibble) and row j + 8 (high nibble). 8 bits: q [N/16, K, 16] int8. dm [N/16, K/32, 2, 16] float32: d then m."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

PANEL = 16
GROUP = 32

# GGUF type name -> (bytes per 32-weight block, bits the packed q needs). Keyed by name, not by gguf's enum,
# so that machines without the gguf package (GPU hosts running benchmarks/gpu_check.py) can import this.
FORMATS = {
    "Q4_0": (18, 4),
    "Q4_1": (20, 4),
    "Q8_0": (34, 8),
}


def qtype_name(qtype) -> str:
    """A GGUF type as its name: accepts gguf's GGMLQuantizationType or the name itself."""
    return getattr(qtype, "name", qtype)


@dataclass(slots=True, frozen=True)
class Blocks:
    """A weight [N, K] decoded from its blocks: q [N, K] int16, d and m [N, K / 32] float32; `bits` is what q needs."""

    q: np.ndarray
    d: np.ndarray
    m: np.ndarray
    bits: int

    @property
    def shape(self) -> tuple[int, int]:
        return self.q.shape

    def rows(self, order: np.ndarray) -> Blocks:
        return Blocks(self.q[order], self.d[order], self.m[order], self.bits)


@dataclass(slots=True, frozen=True)
class PackedWeight:
    """What BlockQuantLinear holds: the kernel's layout of one [out_features, in_features] weight."""

    q: torch.Tensor
    dm: torch.Tensor
    bits: int

    @property
    def out_features(self) -> int:
        return self.q.shape[0] * PANEL

    @property
    def in_features(self) -> int:
        return self.q.shape[1]


def decode(raw: np.ndarray, qtype, shape: tuple[int, int]) -> Blocks:
    """raw: the tensor's bytes (any shape, row-major); shape: (rows, cols) of the weight; qtype: a FORMATS name
    or gguf's enum member."""
    qtype = qtype_name(qtype)
    if qtype not in FORMATS:
        raise ValueError(f"GGUF type {qtype} has no block-quantized kernel")
    rows, cols = shape
    if cols % GROUP:
        raise ValueError(f"{cols} columns do not split into blocks of {GROUP}")
    block_bytes, bits = FORMATS[qtype]
    blocks = np.ascontiguousarray(raw, dtype=np.uint8).reshape(rows, cols // GROUP, block_bytes)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    if qtype == "Q8_0":
        q = blocks[..., 2:].copy().view(np.int8).astype(np.int16)
        m = np.zeros_like(d)
    else:
        start = 4 if qtype == "Q4_1" else 2
        nibbles = blocks[..., start:]
        q = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1).astype(np.int16)  # weights 0..15, then 16..31
        m = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32) \
            if qtype == "Q4_1" else -8 * d
    return Blocks(q.reshape(rows, cols), d, m, bits)


def concat(parts: list[Blocks]) -> Blocks:
    """Stack weights along rows (a fused q|k|v or gate|up); 4-bit parts widen to 8 bits next to an 8-bit one."""
    return Blocks(np.concatenate([p.q for p in parts]), np.concatenate([p.d for p in parts]),
                  np.concatenate([p.m for p in parts]), max(p.bits for p in parts))


def can_pack(blocks: Blocks) -> bool:
    rows, cols = blocks.shape
    return rows % PANEL == 0 and cols % GROUP == 0


def pack(blocks: Blocks) -> PackedWeight:
    if not can_pack(blocks):
        raise ValueError(f"a [{blocks.shape[0]}, {blocks.shape[1]}] weight does not split into "
                         f"{PANEL}-row panels and {GROUP}-column groups")
    rows, cols = blocks.shape
    panels, groups = rows // PANEL, cols // GROUP
    q = blocks.q.reshape(panels, PANEL, cols)
    if blocks.bits == 4:
        q = (q[:, :8] | (q[:, 8:] << 4)).astype(np.uint8)  # [P, 8, K]
    else:
        q = q.astype(np.int8)  # [P, 16, K]
    dm = np.stack([blocks.d.reshape(panels, PANEL, groups), blocks.m.reshape(panels, PANEL, groups)], axis=1)
    return PackedWeight(q=torch.from_numpy(np.ascontiguousarray(q.transpose(0, 2, 1))),
                        dm=torch.from_numpy(np.ascontiguousarray(dm.transpose(0, 3, 1, 2))), bits=blocks.bits)


def dequantize(blocks: Blocks) -> torch.Tensor:
    """The dense float32 weight: d * q + m, each product exact, one rounding."""
    d = np.repeat(blocks.d, GROUP, axis=1)
    m = np.repeat(blocks.m, GROUP, axis=1)
    return torch.from_numpy(d * blocks.q.astype(np.float32) + m)
