"""The engine's one config object."""
from __future__ import annotations

from dataclasses import field
from typing import Annotated, Literal

from pydantic import Field, SkipValidation

from workers.speculative_config import SpeculativeConfig
from workers.validation import validated

_DEVICES = ("cpu", "cuda")
Positive = Annotated[int, Field(ge=1)]
NonNegative = Annotated[float, Field(ge=0)]


@validated(slots=True)
class EngineConfig:
    model: str = "smollm2-135m-instruct"  # a catalogue name (workers.model.registry) or a path
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    # Where weights, the KV cache, per-step metadata and sampling live: "cuda" when a GPU is visible, else "cpu".
    device: str | None = None
    # The kernel set every layer runs (workers.model.kernel_sets): "auto" is Triton on CUDA, the compiled C
    # kernels for float32 on the CPU, PyTorch where neither applies; "triton" on the CPU needs TRITON_INTERPRET=1.
    kernels: Literal["auto", "cpu", "triton", "torch"] = "auto"
    # Weight-only quantization at load time of every linear but the output head: "int8" (per output channel,
    # W8A16), "int4" (scale and minimum per 128 inputs, or 64 where 128 does not divide a row; W4A16) or
    # "q8_0" (GGUF Q8_0 blocks). None: GGUF files keep their own blocks, other checkpoints stay dense.
    quantization: Literal["int8", "int4", "q8_0"] | None = None
    block_size: Positive = 16
    # KV pool size: num_kv_blocks wins when set; else on CUDA it is what gpu_memory_utilization of the device's
    # memory leaves after the weights and activations, and on the CPU kv_cache_memory_bytes.
    kv_cache_memory_bytes: Positive = 512 * 1024 * 1024
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] = 0.9
    # Decode-only steps on CUDA replay CUDA graphs captured per batch-size bucket (no Python between kernels).
    cuda_graphs: bool = True
    num_kv_blocks: Positive | None = None
    max_num_seqs: Positive = 64
    # Serving admission (AsyncEngine): requests waiting for a batch slot, on this replica and per tenant (the
    # gateway's opaque cache salt). Past either, a request is refused at once instead of queueing without
    # bound; None: unbounded (the offline LLM never refuses).
    max_waiting_requests: Positive | None = 512
    max_waiting_per_tenant: Positive | None = 64
    max_num_batched_tokens: Positive = 1024
    # Who runs next (workers/engine/scheduling_policy.py): "fair" (priority, then per-tenant fair share by
    # virtual token counters, then arrival), "priority" (priority, then arrival) or "fcfs". With one tenant
    # and one priority all three are FCFS. Fair share weighs a prefill token fair_prefill_weight and a
    # generated one fair_decode_weight; a waiting request displaces a running one of another tenant served
    # fair_preempt_margin weighted tokens more than its own.
    scheduling_policy: Literal["fair", "priority", "fcfs"] = "fair"
    fair_prefill_weight: NonNegative = 1.0
    fair_decode_weight: NonNegative = 2.0
    fair_preempt_margin: NonNegative = 64.0
    # Background work (the gateway's Batch API lines, at the lowest priority): a sequence whose priority is at
    # least this runs only in steps with no other sequence to run, so it fills idle capacity without
    # lengthening any other request's steps (it keeps its blocks meanwhile). None: no background class.
    background_priority: int | None = 1_000_000
    # Metered worker time (workers/engine/step_meter.py): a step's wall time is shared among its requests by
    # tokens, a prefill token weighing 1 and a decode token this much (measured: benchmarks/step_weights.py).
    meter_decode_weight: NonNegative = 1.4
    max_model_len: Positive | None = None  # None: the model's own context length
    enable_prefix_caching: bool = True
    # Prompt heads every tenant may share in the prefix cache despite per-request salts, e.g. a
    # common system prompt: each a raw prompt string, or chat messages rendered by the template
    # without a generation prompt. Everything after them is reused only under the same salt.
    shared_prefixes: list = field(default_factory=list)
    num_threads: int | None = None  # torch intra-op threads; None leaves torch's default
    # With the CPU kernels (without a C compiler the engine runs PyTorch ops by itself): multiply by GGUF
    # Q4_0/Q4_1/Q8_0 (or load-time int8/int4) weights in their blocks, 4-8 bits a weight read per step instead of
    # 32. The values are the dense ones exactly and the arithmetic is float32 either way.
    block_quant_matmul: bool = True
    # With blocked weights, decode-only steps run all layers in one kernel call (no Python between layers).
    decoder_stack: bool = True
    # With blocked weights on a CPU with AVX-512 VNNI: each linear's input rounded to int8 per 32 columns (as
    # llama.cpp's Q8_0 activations) and multiplied by the weights' integer values, 4x the multiply-adds per
    # instruction of float32 (workers/kernels/cpu_qlinear.c): decode steps ~1.5x and prompts ~2.8x faster on a Zen 4
    # box. SmolLM2-135M's perplexity is 1.006x float32's, but greedy text follows float32's at ~93 % of positions
    # (benchmarks/quant_quality.py): an operator's choice, off by default. Without VNNI float32 runs (logged).
    int8_activations: bool = False
    seed: int = 0
    # Structured output (workers.structured.compiler): grammars compile in this many threads of their own, and a
    # request waits this long for its grammar before it is refused as too costly.
    grammar_compile_threads: Positive = 2
    grammar_compile_timeout_s: Annotated[float, Field(gt=0)] = 5.0
    # Speculative decoding (workers/engine/spec_decode): None (off), a SpeculativeConfig or a dict of its fields, e.g.
    # {"method": "ngram", "num_tokens": 4} or {"method": "draft", "num_layers": 8}.
    speculative: SkipValidation[SpeculativeConfig | dict | None] = None  # SpeculativeConfig.of checks it

    def __post_init__(self) -> None:
        if self.device is None:
            import torch

            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        if self.device.split(":")[0] not in _DEVICES:
            raise ValueError(f"device must be one of {_DEVICES} (optionally 'cuda:N'), got {self.device!r}")
        for i, p in enumerate(self.shared_prefixes):
            ok = (isinstance(p, str) and p) or (isinstance(p, list) and p and all(
                isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                for m in p))
            if not ok:
                raise ValueError(f"shared_prefixes[{i}] must be a non-empty string or a list of "
                                 "{'role', 'content'} messages")
        self.speculative = SpeculativeConfig.of(self.speculative)
