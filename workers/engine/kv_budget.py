"""How many bytes the KV cache may take: a fixed budget on the CPU; on CUDA what gpu_memory_utilization of the
device leaves once the weights (already loaded) and the activations of the largest step are accounted for,
as vLLM sizes its cache."""
from __future__ import annotations

import torch

from workers.config import EngineConfig
from workers.model.llama import LlamaConfig

# cuBLAS workspaces, CUDA graphs' private pool, the allocator's fragmentation.
_CUDA_OVERHEAD_BYTES = 512 * 1024 * 1024


def activation_bytes(config: EngineConfig, model_config: LlamaConfig, element_size: int = 4) -> int:
    """A generous bound on one step's live activations: max_num_batched_tokens rows of the widest layer
    intermediates, plus float32 logits and sampling buffers for max_num_seqs rows."""
    c = model_config
    per_token = 2 * c.hidden_size + (c.num_heads + 2 * c.num_kv_heads) * c.head_dim + 3 * c.intermediate_size
    return (config.max_num_batched_tokens * per_token * element_size
            + 4 * config.max_num_seqs * c.vocab_size * 4)


def kv_cache_bytes(config: EngineConfig, device: torch.device, model_config: LlamaConfig) -> int:
    if device.type != "cuda":
        return config.kv_cache_memory_bytes
    free, total = torch.cuda.mem_get_info(device)
    in_use = total - free  # this process's weights, and anything else already on the device
    budget = int(total * config.gpu_memory_utilization) - in_use - activation_bytes(config, model_config)
    budget -= _CUDA_OVERHEAD_BYTES
    if budget <= 0:
        raise ValueError(f"gpu_memory_utilization {config.gpu_memory_utilization} of {total / 2**30:.1f} GiB leaves "
                         f"no room for the KV cache ({in_use / 2**30:.1f} GiB already in use)")
    return budget
