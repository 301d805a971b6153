"""Typed calls into the compiled CPU kernels (cpu_ops.c, cpu_qlinear.c, cpu_stack.c).

Each wrapper checks what the C side cannot (dtype, device, layout, sizes, index ranges), then passes raw
pointers; the ctypes call releases the GIL for the kernel's duration. The checks cost several times the
call itself (~14 us against ~4 us), and a decode step makes ~300 calls, so the model's layers hold an
`unchecked()` twin: their tensors are shaped by construction, and the runner validates each step's cache
indices once (AttentionMetadata.validate) instead of every layer re-checking them. `load()` returns None where
the kernels cannot be built or are switched off (TOLLGATE_CPU_KERNELS=0); callers then use their PyTorch path."""
from __future__ import annotations

import ctypes
import functools
import logging
import os

import torch  # first: its libgomp must be the one our library binds to

from workers.kernels.cpu_build import KernelBuildError, build

log = logging.getLogger(__name__)

DISABLE_ENV = "TOLLGATE_CPU_KERNELS"
_P, _I, _F = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float

_SIGNATURES = {
    "tg_rms_norm": [_P, _I, _P, _P, _I, _I, _F],
    "tg_silu_mul": [_P, _P, _I, _I],
    "tg_rotary_store_kv": [_P, _I, _P, _P, _P, _P, _P, _I, _I, _I, _I, _I],
    "tg_paged_decode_attention": [_P, _I, _P, _P, _P, _I, _P, _P, _I, _I, _I, _I, _I, _I, _F],
    "tg_block_quant_linear": [_P, _I, _I, _P, _P, _I, _I, _P, _P],
    "tg_decoder_stack": [_P, _I, _I, _P, _P, _I, _I, _I, _I, _I, _F, _P, _P, _P, _P, _P, _I, _I, _P, _I, _P, _F,
                         _P],
}

PANEL, GROUP = 16, 32  # the block-quantized weight layout of cpu_qlinear.c
I8_ACT = 256  # or'ed into a linear's bits: its input quantized to int8 (cpu_qlinear.c)


def _check(t: torch.Tensor, name: str, *, dtype: torch.dtype = torch.float32, dim: int | None = None) -> None:
    if t.dtype != dtype or t.device.type != "cpu":
        raise ValueError(f"{name} must be a CPU {dtype} tensor, got {t.dtype} on {t.device}")
    if dim is not None and t.dim() != dim:
        raise ValueError(f"{name} must have {dim} dimensions, got shape {tuple(t.shape)}")
    if t.stride(-1) != 1:
        raise ValueError(f"{name} must be contiguous in its last dimension")


def _check_dense(t: torch.Tensor, name: str, **kw) -> None:
    _check(t, name, **kw)
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous")


class CpuKernels:
    def __init__(self, lib: ctypes.CDLL, *, validate: bool = True) -> None:
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, None
        lib.tg_int8_activations.argtypes, lib.tg_int8_activations.restype = [], ctypes.c_int64
        self._lib = lib
        self.validate = validate
        # Built with AVX-512 VNNI and VBMI: a block-quantized linear may take its input as int8.
        self.int8_activations = bool(lib.tg_int8_activations())

    def decoder_stack_fn(self):
        """The raw whole-stack decode kernel; workers.kernels.cpu_decoder.DecoderStack wraps and checks it."""
        return self._lib.tg_decoder_stack

    def unchecked(self) -> CpuKernels:
        """The same kernels without argument checks, for callers whose inputs are valid by construction."""
        return CpuKernels(self._lib, validate=False)

    def rms_norm(self, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        """x [rows, dim] (rows may be strided) -> dense [rows, dim]."""
        rows, dim = x.shape
        if self.validate:
            _check(x, "x", dim=2)
            _check_dense(weight, "weight", dim=1)
            if weight.shape[0] != dim:
                raise ValueError(f"weight has {weight.shape[0]} elements for rows of {dim}")
        out = torch.empty((rows, dim), dtype=x.dtype)
        self._lib.tg_rms_norm(x.data_ptr(), x.stride(0), weight.data_ptr(), out.data_ptr(), rows, dim, eps)
        return out

    def silu_mul(self, gate_up: torch.Tensor) -> torch.Tensor:
        """gate_up [rows, 2 * inter] -> silu(gate) * up, [rows, inter]."""
        rows, width = gate_up.shape
        if self.validate:
            _check_dense(gate_up, "gate_up", dim=2)
            if width % 2:
                raise ValueError(f"gate_up width {width} is odd")
        out = torch.empty((rows, width // 2), dtype=gate_up.dtype)
        self._lib.tg_silu_mul(gate_up.data_ptr(), out.data_ptr(), rows, width // 2)
        return out

    def rotary_store_kv(self, qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, slots: torch.Tensor,
                        k_cache: torch.Tensor, v_cache: torch.Tensor, heads: int, kv_heads: int,
                        head_dim: int) -> None:
        """Rotate qkv's q and k heads in place with per-token cos/sin rows [T, head_dim]; write k and v into
        the caches [KVH, num_blocks, block_size, head_dim] at slots [T]."""
        tokens, cache_slots = qkv.shape[0], k_cache.shape[1] * k_cache.shape[2]
        if self.validate:
            _check_rotary(qkv, cos, sin, slots, k_cache, v_cache, heads, kv_heads, head_dim)
        self._lib.tg_rotary_store_kv(qkv.data_ptr(), qkv.stride(0), cos.data_ptr(), sin.data_ptr(),
                                     slots.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(), tokens, heads,
                                     kv_heads, head_dim, cache_slots)

    def block_quant_linear(self, x: torch.Tensor, q: torch.Tensor, dm: torch.Tensor, bits: int,
                           residual: torch.Tensor | None = None, *, int8_activations: bool = False) -> torch.Tensor:
        """x [M, K] @ W.T (+ residual [M, N]) for W packed by workers.model.block_quant:
        q [N / 16, K, 8] uint8 (4 bits) or [N / 16, K, 16] int8 (8 bits); dm [N / 16, K / 32, 2, 16] float32.
        `int8_activations` (where self.int8_activations): x rounded to int8 per row and 32 columns first."""
        x = x.contiguous()
        if residual is not None:
            residual = residual.contiguous()
        rows, in_features, out_features = x.shape[0], q.shape[1], q.shape[0] * PANEL
        if self.validate:
            _check_block_quant(x, q, dm, bits, residual)
        out = torch.empty((rows, out_features), dtype=torch.float32)
        if int8_activations and self.validate and not self.int8_activations:
            raise ValueError("int8 activations need the kernels built with AVX-512 VNNI and VBMI")
        self._lib.tg_block_quant_linear(x.data_ptr(), rows, in_features, q.data_ptr(), dm.data_ptr(), out_features,
                                        bits | (I8_ACT if int8_activations else 0), out.data_ptr(),
                                        None if residual is None else residual.data_ptr())
        return out

    def paged_decode_attention(self, q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                               block_tables: torch.Tensor, context_lens: torch.Tensor, scale: float,
                               out: torch.Tensor | None = None) -> torch.Tensor:
        """q [n, H, D] (rows may be strided); caches [KVH, num_blocks, block_size, D]; block_tables
        [n, max_blocks] long; context_lens [n] long, each >= 1. Returns [n, H, D] (into `out` if given)."""
        n, heads, head_dim = q.shape
        kv_heads, num_blocks, block_size, _ = k_cache.shape
        if self.validate:
            _check_decode(q, k_cache, v_cache, block_tables, context_lens, out)
        if out is None:
            out = torch.empty((n, heads, head_dim), dtype=q.dtype)
        self._lib.tg_paged_decode_attention(q.data_ptr(), q.stride(0), k_cache.data_ptr(), v_cache.data_ptr(),
                                            block_tables.data_ptr(), block_tables.shape[1],
                                            context_lens.data_ptr(), out.data_ptr(), n, heads, kv_heads,
                                            head_dim, num_blocks, block_size, scale)
        return out


def _check_rotary(qkv, cos, sin, slots, k_cache, v_cache, heads: int, kv_heads: int, head_dim: int) -> None:
    _check(qkv, "qkv", dim=2)
    _check_dense(cos, "cos", dim=2)
    _check_dense(sin, "sin", dim=2)
    _check_dense(slots, "slots", dtype=torch.long, dim=1)
    _check_dense(k_cache, "k_cache", dim=4)
    _check_dense(v_cache, "v_cache", dim=4)
    tokens = qkv.shape[0]
    if qkv.shape[1] != (heads + 2 * kv_heads) * head_dim:
        raise ValueError(f"qkv width {qkv.shape[1]} is not (heads + 2 kv_heads) * head_dim")
    if cos.shape != (tokens, head_dim) or sin.shape != (tokens, head_dim) or slots.shape[0] != tokens:
        raise ValueError("cos, sin and slots need one row per token")
    if k_cache.shape != v_cache.shape or k_cache.shape[0] != kv_heads or k_cache.shape[3] != head_dim:
        raise ValueError(f"caches of shape {tuple(k_cache.shape)} do not fit {kv_heads} heads of {head_dim}")
    check_slots(slots, k_cache.shape[1] * k_cache.shape[2])


def _check_block_quant(x, q, dm, bits: int, residual) -> None:
    _check_dense(x, "x", dim=2)
    _check_dense(dm, "dm", dim=4)
    if bits not in (4, 8) or q.dtype != (torch.uint8 if bits == 4 else torch.int8) or not q.is_contiguous():
        raise ValueError(f"q must be contiguous {'uint8' if bits == 4 else 'int8'} for {bits}-bit weights")
    panels, in_features = q.shape[0], q.shape[1]
    if q.shape[2] != PANEL * bits // 8 or dm.shape != (panels, in_features // GROUP, 2, PANEL) \
            or in_features % GROUP:
        raise ValueError(f"q {tuple(q.shape)} and dm {tuple(dm.shape)} are not a packed {bits}-bit weight")
    if x.shape[1] != in_features:
        raise ValueError(f"x has {x.shape[1]} columns, the weight {in_features}")
    if residual is not None:
        _check_dense(residual, "residual", dim=2)
        if residual.shape != (x.shape[0], panels * PANEL):
            raise ValueError(f"residual has shape {tuple(residual.shape)}, expected {(x.shape[0], panels * PANEL)}")


def _check_decode(q, k_cache, v_cache, block_tables, context_lens, out) -> None:
    _check(q, "q", dim=3)
    _check_dense(k_cache, "k_cache", dim=4)
    _check_dense(v_cache, "v_cache", dim=4)
    n, heads, head_dim = q.shape
    kv_heads, _, block_size, cache_dim = k_cache.shape
    if q.stride(1) != head_dim or cache_dim != head_dim or heads % kv_heads:
        raise ValueError(f"q {tuple(q.shape)} does not fit caches {tuple(k_cache.shape)}")
    if k_cache.shape != v_cache.shape:
        raise ValueError("k_cache and v_cache differ in shape")
    check_block_tables(block_tables, context_lens, n, k_cache.shape[1], block_size)
    if out is not None:
        _check_dense(out, "out", dim=3)
        if out.shape != (n, heads, head_dim):
            raise ValueError(f"out has shape {tuple(out.shape)}, expected {(n, heads, head_dim)}")


def check_slots(slots: torch.Tensor, cache_slots: int) -> None:
    """Every KV write lands inside the cache."""
    _check_dense(slots, "slots", dtype=torch.long, dim=1)
    if slots.numel():
        lo, hi = slots.aminmax()
        if int(lo) < 0 or int(hi) >= cache_slots:
            raise ValueError(f"slots out of range [0, {cache_slots})")


def check_block_tables(block_tables: torch.Tensor, context_lens: torch.Tensor, rows: int, num_blocks: int,
                       block_size: int) -> None:
    """Every KV read lands inside the cache: block ids in the pool, context lengths covered by their table."""
    _check_dense(block_tables, "block_tables", dtype=torch.long, dim=2)
    _check_dense(context_lens, "context_lens", dtype=torch.long, dim=1)
    if block_tables.shape[0] != rows or context_lens.shape[0] != rows:
        raise ValueError("block_tables and context_lens need one row per query")
    if rows:
        lo, hi = block_tables.aminmax()
        if int(lo) < 0 or int(hi) >= num_blocks:
            raise ValueError(f"block ids out of range [0, {num_blocks})")
        lo, hi = context_lens.aminmax()
        if int(lo) < 1 or int(hi) > block_tables.shape[1] * block_size:
            raise ValueError("context_lens must be >= 1 and covered by the block tables")


@functools.cache
def load() -> CpuKernels | None:
    """The kernels for this machine, compiled on first call; None when unavailable or switched off."""
    if os.environ.get(DISABLE_ENV, "1") in ("0", "false", "no"):
        return None
    try:
        return CpuKernels(ctypes.CDLL(str(build())))
    except (KernelBuildError, OSError) as exc:
        log.warning("CPU kernels unavailable, using the PyTorch path: %s", exc)
        return None
