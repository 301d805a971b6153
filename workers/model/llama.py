"""Llama: everything architecture-specific lives here (hyper-parameters, weight names, the forward pass).
Another architecture is one more file like this one, registered in workers.model.registry."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from workers.model import block_quant
from workers.model.attention import AttentionMetadata, PagedAttention
from workers.model.gguf_weight import GGUFPart, GGUFWeight
from workers.model.layers import Linear, RMSNorm, RotaryEmbedding, SwiGLU

if TYPE_CHECKING:
    from workers.kernels.cpu import CpuKernels
    from workers.kernels.cpu_decoder import DecoderStack
    from workers.model.gguf_loader import GGUFCheckpoint
    from workers.model.hf_loader import HFCheckpoint
    from workers.model.kernel_sets.base import KernelSet


@dataclass(slots=True, frozen=True)
class LlamaConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rope_theta: float
    rms_norm_eps: float
    max_position_embeddings: int
    tie_word_embeddings: bool

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_layers", "num_heads",
                     "num_kv_heads", "head_dim", "max_position_embeddings"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads {self.num_heads} must be a multiple of num_kv_heads {self.num_kv_heads}")

    @classmethod
    def from_gguf(cls, md: dict[str, Any], tensor_names: set[str]) -> LlamaConfig:
        hidden = int(md["llama.embedding_length"])
        heads = int(md["llama.attention.head_count"])
        vocab = md.get("llama.vocab_size")
        return cls(
            vocab_size=int(vocab) if vocab is not None else len(md["tokenizer.ggml.tokens"]),
            hidden_size=hidden,
            intermediate_size=int(md["llama.feed_forward_length"]),
            num_layers=int(md["llama.block_count"]),
            num_heads=heads,
            num_kv_heads=int(md.get("llama.attention.head_count_kv", heads)),
            head_dim=int(md.get("llama.rope.dimension_count", hidden // heads)),
            rope_theta=float(md.get("llama.rope.freq_base", 10000.0)),
            rms_norm_eps=float(md["llama.attention.layer_norm_rms_epsilon"]),
            max_position_embeddings=int(md["llama.context_length"]),
            tie_word_embeddings="output.weight" not in tensor_names,
        )

    @classmethod
    def from_hf(cls, cfg: dict[str, Any]) -> LlamaConfig:
        if cfg.get("rope_scaling"):
            raise ValueError(f"rope_scaling {cfg['rope_scaling']!r} is not supported")
        heads = int(cfg["num_attention_heads"])
        rope = cfg.get("rope_parameters") or {}
        return cls(
            vocab_size=int(cfg["vocab_size"]),
            hidden_size=int(cfg["hidden_size"]),
            intermediate_size=int(cfg["intermediate_size"]),
            num_layers=int(cfg["num_hidden_layers"]),
            num_heads=heads,
            num_kv_heads=int(cfg.get("num_key_value_heads") or heads),
            head_dim=int(cfg.get("head_dim") or int(cfg["hidden_size"]) // heads),
            rope_theta=float(cfg.get("rope_theta") or rope.get("rope_theta", 10000.0)),
            rms_norm_eps=float(cfg["rms_norm_eps"]),
            max_position_embeddings=int(cfg["max_position_embeddings"]),
            tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        )


# GGUF tensor name -> HF name. {i} is the layer index.
_GGUF_TO_HF = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
    "blk.{i}.attn_norm.weight": "model.layers.{i}.input_layernorm.weight",
    "blk.{i}.ffn_norm.weight": "model.layers.{i}.post_attention_layernorm.weight",
    "blk.{i}.attn_q.weight": "model.layers.{i}.self_attn.q_proj.weight",
    "blk.{i}.attn_k.weight": "model.layers.{i}.self_attn.k_proj.weight",
    "blk.{i}.attn_v.weight": "model.layers.{i}.self_attn.v_proj.weight",
    "blk.{i}.attn_output.weight": "model.layers.{i}.self_attn.o_proj.weight",
    "blk.{i}.ffn_gate.weight": "model.layers.{i}.mlp.gate_proj.weight",
    "blk.{i}.ffn_up.weight": "model.layers.{i}.mlp.up_proj.weight",
    "blk.{i}.ffn_down.weight": "model.layers.{i}.mlp.down_proj.weight",
}


def unpermute_rotary_rows(w: torch.Tensor, num_heads: int) -> torch.Tensor:
    """llama.cpp's converter reorders each head's Q/K rows from HF's rotate-half layout (first half, second half)
    into interleaved pairs. Undo it: rows (h, i, pair) -> (h, pair, i)."""
    out_dim = w.shape[0]
    return w.reshape(num_heads, out_dim // num_heads // 2, 2, *w.shape[1:]).transpose(1, 2).reshape(w.shape)


def hf_tensors_from_gguf(ck: GGUFCheckpoint, cfg: LlamaConfig) -> dict[str, torch.Tensor]:
    names = {}
    for i in range(cfg.num_layers):
        names.update({g.format(i=i): h.format(i=i) for g, h in _GGUF_TO_HF.items()})
    out = {}
    for name, tensor in ck.tensors.items():
        if name not in names:
            raise ValueError(f"unexpected tensor {name!r} in a llama GGUF file")
        if name.endswith("attn_q.weight"):
            tensor = unpermute_rotary_rows(tensor, cfg.num_heads)
        elif name.endswith("attn_k.weight"):
            tensor = unpermute_rotary_rows(tensor, cfg.num_kv_heads)
        out[names[name]] = tensor
    return out


# Module path -> the GGUF tensors fused into it, with the head count whose rotary rows need reordering.
_FUSED_LINEARS = {
    "layers.{i}.attn.qkv": (("blk.{i}.attn_q.weight", "heads"), ("blk.{i}.attn_k.weight", "kv_heads"),
                            ("blk.{i}.attn_v.weight", None)),
    "layers.{i}.attn.o": (("blk.{i}.attn_output.weight", None),),
    "layers.{i}.mlp.gate_up": (("blk.{i}.ffn_gate.weight", None), ("blk.{i}.ffn_up.weight", None)),
    "layers.{i}.mlp.down": (("blk.{i}.ffn_down.weight", None),),
}


def gguf_weights(ck: GGUFCheckpoint, cfg: LlamaConfig) -> dict[str, GGUFWeight]:
    """Module path -> its weight as GGUF blocks as stored, for every linear whose tensors are all block-quantized
    (the others stay dense). Row order and fusion match load_hf_tensors."""
    heads = {"heads": cfg.num_heads, "kv_heads": cfg.num_kv_heads}

    def part(name: str, rotary: str | None) -> GGUFPart | None:
        raw = ck.raw.get(name)
        qtype = None if raw is None else block_quant.qtype_name(raw.qtype)
        if qtype not in block_quant.FORMATS or len(raw.shape) != 2:
            return None
        rows, cols = raw.shape
        data = np.ascontiguousarray(raw.data, dtype=np.uint8).reshape(rows, -1)
        if rotary is not None:
            order = unpermute_rotary_rows(torch.arange(rows).unsqueeze(1), heads[rotary])[:, 0]
            data = data[np.asarray(order)]
        return GGUFPart(data, qtype, cols)

    out = {}
    for i in range(cfg.num_layers):
        for path, names in _FUSED_LINEARS.items():
            found = [part(name.format(i=i), rotary) for name, rotary in names]
            if all(p is not None for p in found):
                out[path.format(i=i)] = GGUFWeight.stack(found)
    head = part("token_embd.weight" if cfg.tie_word_embeddings else "output.weight", None)
    if head is not None:
        out["lm_head"] = GGUFWeight.stack([head])
    return out


class LlamaAttention(nn.Module):
    def __init__(self, cfg: LlamaConfig, dtype: torch.dtype) -> None:
        super().__init__()
        self.q_size = cfg.num_heads * cfg.head_dim
        self.kv_size = cfg.num_kv_heads * cfg.head_dim
        self.qkv = Linear(cfg.hidden_size, self.q_size + 2 * self.kv_size, dtype=dtype)  # fused q|k|v
        self.o = Linear(self.q_size, cfg.hidden_size, dtype=dtype)
        self.attn = PagedAttention(cfg.num_heads, cfg.num_kv_heads, cfg.head_dim)

    def forward(self, x, cos, sin, k_cache, v_cache, meta: AttentionMetadata, residual: torch.Tensor) -> torch.Tensor:
        """residual + o_proj(attention(x))."""
        return self.o(self.attn(self.qkv(x), cos, sin, k_cache, v_cache, meta), residual)


class LlamaDecoderLayer(nn.Module):
    def __init__(self, cfg: LlamaConfig, dtype: torch.dtype) -> None:
        super().__init__()
        self.input_norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, dtype=dtype)
        self.attn = LlamaAttention(cfg, dtype)
        self.post_attn_norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, dtype=dtype)
        self.mlp = SwiGLU(cfg.hidden_size, cfg.intermediate_size, dtype=dtype)

    def forward(self, x, cos, sin, k_cache, v_cache, meta: AttentionMetadata) -> torch.Tensor:
        # Residual adds ride inside the o_proj and down_proj GEMMs.
        x = self.attn(self.input_norm(x), cos, sin, k_cache, v_cache, meta, residual=x)
        return self.mlp(self.post_attn_norm(x), residual=x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, cfg: LlamaConfig, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.config = cfg
        self.dtype = dtype
        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden_size, dtype=dtype)
        self.layers = nn.ModuleList(LlamaDecoderLayer(cfg, dtype) for _ in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, dtype=dtype)
        self.lm_head = Linear(cfg.hidden_size, cfg.vocab_size, dtype=dtype)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.embed.weight
        self.rotary = RotaryEmbedding(cfg.head_dim, cfg.max_position_embeddings, cfg.rope_theta)
        self.decoder_stack: DecoderStack | None = None  # set by enable_decoder_stack
        self.kernels: KernelSet | None = None  # the step's metadata is prepared by the layers' kernel set

    def enable_decoder_stack(self, kernels: CpuKernels) -> bool:
        """Run decode-only steps through all layers in one kernel call; possible once every linear of every
        layer reads block-quantized weights. Returns whether it is on."""
        from workers.kernels.cpu_decoder import DecoderStack, LayerWeights, StackShape

        linears = [(layer.attn.qkv, layer.attn.o, layer.mlp.gate_up, layer.mlp.down) for layer in self.layers]
        if not all(hasattr(m, "q") and hasattr(m, "dm") for group in linears for m in group):
            return False
        cfg = self.config
        layers = [LayerWeights(layer.input_norm.weight.detach(), layer.post_attn_norm.weight.detach(), *group)
                  for layer, group in zip(self.layers, linears)]
        shape = StackShape(cfg.hidden_size, cfg.intermediate_size, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim,
                           cfg.rms_norm_eps)
        self.decoder_stack = DecoderStack(kernels, layers, shape)
        return True

    # KV cache geometry, for the runner to size and allocate the pool.
    @property
    def num_kv_heads(self) -> int:
        return self.config.num_kv_heads

    @property
    def head_dim(self) -> int:
        return self.config.head_dim

    @property
    def max_context_len(self) -> int:
        return self.config.max_position_embeddings

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, k_cache: torch.Tensor,
                v_cache: torch.Tensor, meta: AttentionMetadata, logits_indices: torch.Tensor) -> torch.Tensor:
        """input_ids, positions: [T]; caches: [num_layers, KVH, num_blocks, block_size, D].
        Returns float32 logits [len(logits_indices), vocab] for the sampling positions only."""
        if meta.prepared_by is not self.kernels:
            self.kernels.prepare(meta, k_cache[0])  # once a step: index checks, whatever the set derives
        x = self.embed(input_ids)  # [T, hidden]
        cos, sin = self.rotary.lookup(positions, x.dtype)
        if self.decoder_stack is not None and meta.num_decode == x.shape[0]:
            x = self.decoder_stack.run(x, cos, sin, k_cache, v_cache, meta)
        else:
            for i, layer in enumerate(self.layers):
                x = layer(x, cos, sin, k_cache[i], v_cache[i], meta)
        return self.lm_head(self.norm(x[logits_indices])).float()

    def early_exit(self, num_layers: int) -> LlamaEarlyExit:
        """This model cut after its first num_layers layers, then its own final norm and head: a draft model
        sharing every weight (and, for those layers, the KV a forward pass of the whole model writes)."""
        return LlamaEarlyExit(self, num_layers)

    @torch.no_grad()
    def load_hf_tensors(self, tensors: dict[str, torch.Tensor]) -> None:
        """Copy HF-named weights in, fusing q|k|v and gate|up."""
        def take(name: str) -> torch.Tensor:
            if name not in tensors:
                raise KeyError(f"missing weight {name!r}")
            return tensors[name]

        self.embed.weight.copy_(take("model.embed_tokens.weight"))
        self.norm.weight.copy_(take("model.norm.weight"))
        if not self.config.tie_word_embeddings:
            self.lm_head.weight.copy_(take("lm_head.weight"))
        for i, layer in enumerate(self.layers):
            p = f"model.layers.{i}."
            layer.input_norm.weight.copy_(take(p + "input_layernorm.weight"))
            layer.post_attn_norm.weight.copy_(take(p + "post_attention_layernorm.weight"))
            layer.attn.qkv.weight.copy_(torch.cat([take(p + f"self_attn.{n}_proj.weight") for n in "qkv"]))
            layer.attn.o.weight.copy_(take(p + "self_attn.o_proj.weight"))
            layer.mlp.gate_up.weight.copy_(torch.cat([take(p + "mlp.gate_proj.weight"),
                                                      take(p + "mlp.up_proj.weight")]))
            layer.mlp.down.weight.copy_(take(p + "mlp.down_proj.weight"))

    @classmethod
    def from_gguf(cls, ck: GGUFCheckpoint, dtype: torch.dtype) -> LlamaForCausalLM:
        cfg = LlamaConfig.from_gguf(ck.metadata, set(ck.tensors))
        model = cls(cfg, dtype)
        model.load_hf_tensors(hf_tensors_from_gguf(ck, cfg))
        return model.eval()

    @staticmethod
    def gguf_weights(ck: GGUFCheckpoint) -> dict[str, GGUFWeight]:
        return gguf_weights(ck, LlamaConfig.from_gguf(ck.metadata, set(ck.tensors)))

    @classmethod
    def from_hf(cls, ck: HFCheckpoint, dtype: torch.dtype) -> LlamaForCausalLM:
        model = cls(LlamaConfig.from_hf(ck.config), dtype)
        model.load_hf_tensors(ck.tensors)
        return model.eval()


class LlamaEarlyExit(nn.Module):
    """The first num_layers layers of a LlamaForCausalLM, then its final norm and head. Holds no weights of
    its own; its caches are the first num_layers layers' ([num_layers, KVH, num_blocks, block_size, D])."""

    def __init__(self, full: LlamaForCausalLM, num_layers: int) -> None:
        super().__init__()
        if not 1 <= num_layers <= full.config.num_layers:
            raise ValueError(f"num_layers must be in [1, {full.config.num_layers}], got {num_layers}")
        self.full = full
        self.num_layers = num_layers
        self.config = full.config
        self.dtype = full.dtype
        self.decoder_stack = None if full.decoder_stack is None else full.decoder_stack.first(num_layers)

    @property
    def vocab_size(self) -> int:
        return self.config.vocab_size

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, k_cache: torch.Tensor,
                v_cache: torch.Tensor, meta: AttentionMetadata, logits_indices: torch.Tensor) -> torch.Tensor:
        """As LlamaForCausalLM.forward, through the first num_layers layers."""
        full = self.full
        if meta.prepared_by is not full.kernels:
            full.kernels.prepare(meta, k_cache[0])
        x = full.embed(input_ids)  # [T, hidden]
        cos, sin = full.rotary.lookup(positions, x.dtype)
        if self.decoder_stack is not None and meta.num_decode == x.shape[0]:
            x = self.decoder_stack.run(x, cos, sin, k_cache, v_cache, meta)
        else:
            for i in range(self.num_layers):
                x = full.layers[i](x, cos, sin, k_cache[i], v_cache[i], meta)
        return full.lm_head(full.norm(x[logits_indices])).float()
