"""Weight-only quantizers for dense checkpoints, run once at load (gpt-fast's first step): a float [N, K]
weight becomes the storage a matmul kernel reads (workers/kernels/triton: int8_matmul, int4_matmul).

Each quantized weight defines its own dense value, `dequantize()`, in float32: s * q + m per element, one
product and one sum, each rounded once (never a fused multiply-add). That is the same arithmetic as
block_quant.dequantize, so `blocks()` hands the CPU block kernel these exact weights: int8 per channel
(d = scale, m = 0) and int4 in groups of any multiple of 32 (d = scale, m = mins, repeated for each of the
group's 32-column blocks) are both w = d * q + m over 32-column groups."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from workers.model.block_quant import GROUP, Blocks
from workers.model.gguf_weight import GGUFPart, GGUFWeight

INT8_MAX = 127
INT4_MAX = 15


def _check_weight(w: torch.Tensor, group: int) -> None:
    if w.dim() != 2:
        raise ValueError(f"weight must be 2-D [out_features, in_features], got shape {tuple(w.shape)}")
    if not w.is_floating_point():
        raise ValueError(f"weight must be a float tensor, got {w.dtype}")
    if w.shape[1] % group:
        raise ValueError(f"in_features {w.shape[1]} does not split into groups of {group}")


def _per_group(values: torch.Tensor, times: int) -> np.ndarray:
    """[N, G] float32 -> [N, G * times] numpy: one entry per 32-column block."""
    return np.ascontiguousarray(values.repeat_interleave(times, dim=1).numpy())


@dataclass(frozen=True, slots=True)
class Int8Weight:
    """w[n, k] = scale[n] * q[n, k]: q int8 [N, K] in -127..127, scale float32 [N] (positive)."""

    q: torch.Tensor
    scale: torch.Tensor

    @property
    def shape(self) -> tuple[int, int]:
        n, k = self.q.shape
        return n, k

    def dequantize(self) -> torch.Tensor:
        return self.scale[:, None] * self.q.to(torch.float32)  # [N, K] float32

    def blocks(self) -> Blocks:
        _n, k = self.shape
        if k % GROUP:
            raise ValueError(f"in_features {k} does not split into blocks of {GROUP}")
        d = _per_group(self.scale.detach().cpu()[:, None], k // GROUP)
        return Blocks(q=self.q.detach().cpu().numpy().astype(np.int16), d=d, m=np.zeros_like(d), bits=8)


@dataclass(frozen=True, slots=True)
class Int4Weight:
    """w[n, k] = scale[n, k // g] * q[n, k] + mins[n, k // g], q in 0..15 packed two a byte along K (byte j of a
    row: weight 2j in the low nibble, 2j + 1 in the high): q uint8 [N, K / 2], scale and mins float32 [N, K / g]."""

    q: torch.Tensor
    scale: torch.Tensor
    mins: torch.Tensor
    group_size: int

    @property
    def shape(self) -> tuple[int, int]:
        return self.q.shape[0], self.q.shape[1] * 2

    def unpacked(self) -> torch.Tensor:
        """q as [N, K] uint8, 0..15."""
        return torch.stack([self.q & 0xF, self.q >> 4], dim=-1).reshape(self.shape)

    def dequantize(self) -> torch.Tensor:
        g = self.group_size
        scale = self.scale.repeat_interleave(g, dim=1)
        mins = self.mins.repeat_interleave(g, dim=1)
        return scale * self.unpacked().to(torch.float32) + mins  # [N, K] float32, as block_quant rounds it

    def blocks(self) -> Blocks:
        per = self.group_size // GROUP  # 32-column blocks a group
        return Blocks(q=self.unpacked().cpu().numpy().astype(np.int16), d=_per_group(self.scale.detach().cpu(), per),
                      m=_per_group(self.mins.detach().cpu(), per), bits=4)


def quantize_int8(w: torch.Tensor) -> Int8Weight:
    """Symmetric per output row: scale = max|w| / 127, q = round(w / scale). An all-zero row gets scale 1."""
    _check_weight(w, 1)
    w = w.detach().to(torch.float32)
    amax = w.abs().amax(dim=1)
    scale = torch.where(amax > 0, amax / INT8_MAX, torch.ones_like(amax))
    q = torch.round(w / scale[:, None]).clamp_(-INT8_MAX, INT8_MAX).to(torch.int8)
    return Int8Weight(q=q, scale=scale)


def quantize_int4(w: torch.Tensor, group_size: int = 128) -> Int4Weight:
    """Asymmetric per (row, group of `group_size` columns): mins = the group's min, scale = (max - min) / 15,
    q = round((w - min) / scale) in 0..15. A constant group gets scale 1 and q 0: its w is exactly mins."""
    if group_size <= 0 or group_size % GROUP:
        raise ValueError(f"group_size must be a positive multiple of {GROUP}, got {group_size}")
    _check_weight(w, group_size)
    w = w.detach().to(torch.float32)
    n, k = w.shape
    groups = w.reshape(n, k // group_size, group_size)
    lo = groups.amin(dim=2)
    span = groups.amax(dim=2) - lo
    scale = torch.where(span > 0, span / INT4_MAX, torch.ones_like(span))
    q = torch.round((groups - lo[..., None]) / scale[..., None]).clamp_(0, INT4_MAX).to(torch.uint8).reshape(n, k)
    packed = q[:, 0::2] | (q[:, 1::2] << 4)  # [N, K / 2]
    return Int4Weight(q=packed.contiguous(), scale=scale, mins=lo, group_size=group_size)


def quantize_q8_0(w: torch.Tensor) -> Blocks:
    """GGUF Q8_0, as ggml computes it: per 32-column block d = max|w| / 127, q = roundf(w / d) (half away from
    zero, with w * (1 / d) as ggml has it), d then stored as fp16. block_quant.dequantize gives its weights."""
    _check_weight(w, GROUP)
    w = w.detach().to(device="cpu", dtype=torch.float32)
    n, k = w.shape
    blocks = w.reshape(n, k // GROUP, GROUP)
    d = blocks.abs().amax(dim=2) / INT8_MAX
    inv = torch.where(d > 0, 1 / d, torch.zeros_like(d))
    scaled = blocks * inv[..., None]
    mag = scaled.abs()
    whole = mag.floor()
    q = torch.sign(scaled) * (whole + torch.floor(2 * (mag - whole)))  # roundf, exactly as gguf-py writes it
    d16 = d.to(torch.float16).to(torch.float32)
    return Blocks(q=q.to(torch.int16).reshape(n, k).numpy(), d=d16.numpy(), m=np.zeros_like(d16.numpy()), bits=8)


def quantize_gguf_q8_0(w: torch.Tensor) -> GGUFWeight:
    """quantize_q8_0's blocks as GGUF stores them (fp16 d, then 32 int8 q, 34 bytes a block), so every kernel that
    reads GGUF blocks (the Triton matmul, the CPU block kernel) runs a dense model quantized at load to Q8_0."""
    b = quantize_q8_0(w)
    n, k = b.shape
    groups = k // GROUP
    d = b.d.astype(np.float16).view(np.uint8).reshape(n, groups, 2)
    q = b.q.astype(np.int8).view(np.uint8).reshape(n, groups, GROUP)
    return GGUFWeight((GGUFPart(np.ascontiguousarray(np.concatenate([d, q], axis=2).reshape(n, -1)), "Q8_0", k),))
