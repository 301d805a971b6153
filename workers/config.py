"""The engine's one config object."""
from __future__ import annotations

from dataclasses import dataclass, field

_DTYPES = ("float32", "bfloat16")


@dataclass(slots=True)
class EngineConfig:
    model: str = "smollm2-135m-instruct"  # a catalogue name (workers.model.registry) or a path
    dtype: str = "float32"
    block_size: int = 16
    # KV pool size: num_kv_blocks wins when set, else it is derived from kv_cache_memory_bytes.
    kv_cache_memory_bytes: int = 512 * 1024 * 1024
    num_kv_blocks: int | None = None
    max_num_seqs: int = 64
    max_num_batched_tokens: int = 1024
    max_model_len: int | None = None  # None: the model's own context length
    enable_prefix_caching: bool = True
    # Prompt heads every tenant may share in the prefix cache despite per-request salts, e.g. a
    # common system prompt: each a raw prompt string, or chat messages rendered by the template
    # without a generation prompt. Everything after them is reused only under the same salt.
    shared_prefixes: list = field(default_factory=list)
    num_threads: int | None = None  # torch intra-op threads; None leaves torch's default
    # Fused C kernels (workers/kernels) for norms, rotary + KV writes and decode attention; float32 on CPU.
    # Without a C compiler the engine falls back to the PyTorch path by itself.
    cpu_kernels: bool = True
    # With cpu_kernels, multiply by GGUF Q4_0/Q4_1/Q8_0 weights in their blocks (4-8 bits a weight read per
    # step instead of 32). The values are the dense ones exactly and the arithmetic is float32 either way.
    block_quant_matmul: bool = True
    # With blocked weights, decode-only steps run all layers in one kernel call (no Python between layers).
    decoder_stack: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        if self.dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {_DTYPES}, got {self.dtype!r}")
        if self.block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {self.block_size}")
        if self.num_kv_blocks is not None and self.num_kv_blocks < 1:
            raise ValueError(f"num_kv_blocks must be >= 1, got {self.num_kv_blocks}")
        if self.kv_cache_memory_bytes < 1:
            raise ValueError(f"kv_cache_memory_bytes must be positive, got {self.kv_cache_memory_bytes}")
        if self.max_num_seqs < 1:
            raise ValueError(f"max_num_seqs must be >= 1, got {self.max_num_seqs}")
        if self.max_num_batched_tokens < 1:
            raise ValueError(f"max_num_batched_tokens must be >= 1, got {self.max_num_batched_tokens}")
        for i, p in enumerate(self.shared_prefixes):
            ok = (isinstance(p, str) and p) or (isinstance(p, list) and p and all(
                isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                for m in p))
            if not ok:
                raise ValueError(f"shared_prefixes[{i}] must be a non-empty string or a list of "
                                 "{'role', 'content'} messages")
        if self.max_model_len is not None and self.max_model_len < 1:
            raise ValueError(f"max_model_len must be >= 1, got {self.max_model_len}")
