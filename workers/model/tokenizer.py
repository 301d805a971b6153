"""Our tokenizer: byte-level BPE built from a GGUF file's vocabulary (or a tokenizer.json),
and the model's own chat template rendered with jinja2."""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers
from tokenizers import Tokenizer as BackendTokenizer

# GGUF token_type values (llama.cpp's llama_token_type).
_CONTROL = 3
_USER_DEFINED = 4

# The GPT-2 split, used by byte-level BPE vocabularies when the file names no other.
_GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


def _byte_level(*splits: str) -> pre_tokenizers.PreTokenizer:
    steps = [pre_tokenizers.Split(Regex(s), behavior="isolated") for s in splits]
    return pre_tokenizers.Sequence([*steps, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])


# tokenizer.ggml.pre -> how text is cut before BPE. SmolLM's vocabulary was learned with every
# digit on its own (llama.cpp's "smollm" pre-tokenizer: split \p{N}, then the GPT-2 regex).
PRE_TOKENIZERS = {
    "default": lambda: _byte_level(_GPT2_SPLIT),
    "gpt2": lambda: _byte_level(_GPT2_SPLIT),
    "smollm": lambda: _byte_level(r"\p{N}", _GPT2_SPLIT),
}


def _bpe_from_gguf(metadata: dict[str, Any]) -> BackendTokenizer:
    tokens = list(metadata["tokenizer.ggml.tokens"])
    merges = [tuple(m.split(" ", 1)) for m in metadata["tokenizer.ggml.merges"]]
    vocab = {tok: i for i, tok in enumerate(tokens)}
    backend = BackendTokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    pre = str(metadata.get("tokenizer.ggml.pre", "default"))
    if pre not in PRE_TOKENIZERS:
        raise ValueError(f"unsupported GGUF pre-tokenizer {pre!r}; known: {sorted(PRE_TOKENIZERS)}")
    backend.pre_tokenizer = PRE_TOKENIZERS[pre]()
    backend.decoder = decoders.ByteLevel()
    types = list(metadata.get("tokenizer.ggml.token_type", []))
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                for t, ty in zip(tokens, types) if ty == _CONTROL])
    backend.add_tokens([AddedToken(t, special=False, normalized=False)
                        for t, ty in zip(tokens, types) if ty == _USER_DEFINED])
    return backend


def _raise_exception(message: str):
    raise ValueError(message)


GIL_FREE_CHARS = 4096  # longer texts are encoded without holding the GIL (a thread hop inside `tokenizers`)


class Tokenizer:
    def __init__(self, backend: BackendTokenizer, *, bos_token_id: int | None, eos_token_ids: Iterable[int],
                 chat_template: str | None) -> None:
        self.backend = backend
        self.bos_token_id = bos_token_id
        self.eos_token_ids: set[int] = set(eos_token_ids)
        if not self.eos_token_ids:
            raise ValueError("a tokenizer needs at least one end-of-sequence token")
        self.vocab_size = backend.get_vocab_size(with_added_tokens=True)
        self.chat_template = chat_template
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                            extensions=["jinja2.ext.loopcontrols"])
        env.globals["raise_exception"] = _raise_exception
        env.filters["tojson"] = lambda v, indent=None: json.dumps(v, indent=indent, ensure_ascii=False)
        self._template = env.from_string(chat_template) if chat_template else None

    @classmethod
    def from_gguf_metadata(cls, metadata: dict[str, Any]) -> Tokenizer:
        model = metadata.get("tokenizer.ggml.model")
        if model != "gpt2":
            raise ValueError(f"only byte-level BPE ('gpt2') GGUF tokenizers are supported, got {model!r}")
        eos = metadata.get("tokenizer.ggml.eos_token_id")
        eot = metadata.get("tokenizer.ggml.eot_token_id")
        bos = metadata.get("tokenizer.ggml.bos_token_id")
        return cls(_bpe_from_gguf(metadata), bos_token_id=None if bos is None else int(bos),
                   eos_token_ids={int(t) for t in (eos, eot) if t is not None},
                   chat_template=metadata.get("tokenizer.chat_template"))

    @classmethod
    def from_folder(cls, path: str | Path) -> Tokenizer:
        """A Hugging Face folder: tokenizer.json, tokenizer_config.json, optionally chat_template.jinja."""
        path = Path(path)
        backend = BackendTokenizer.from_file(str(path / "tokenizer.json"))
        cfg_file = path / "tokenizer_config.json"
        cfg = json.loads(cfg_file.read_text()) if cfg_file.is_file() else {}
        template_file = path / "chat_template.jinja"
        template = template_file.read_text() if template_file.is_file() else cfg.get("chat_template")

        def token_id(key: str) -> int | None:
            tok = cfg.get(key)
            tok = tok.get("content") if isinstance(tok, dict) else tok
            return None if tok is None else backend.token_to_id(tok)

        eos = token_id("eos_token")
        if eos is None:
            raise ValueError(f"{cfg_file} names no eos_token known to tokenizer.json")
        return cls(backend, bos_token_id=token_id("bos_token"), eos_token_ids={eos}, chat_template=template)

    def encode(self, text: str) -> list[int]:
        # Chat templates already spell out their special tokens, so nothing is added here.
        if len(text) > GIL_FREE_CHARS:
            # `encode` holds the GIL throughout (a 400 KB prompt held every other thread, the event loop's too,
            # for a second); `encode_batch` lets go of it while it works, so counting off the loop is off it.
            return self.backend.encode_batch([text], add_special_tokens=False)[0].ids
        return self.backend.encode(text, add_special_tokens=False).ids

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return self.backend.decode(ids, skip_special_tokens=skip_special_tokens)

    def id_to_token(self, token_id: int) -> str | None:
        return self.backend.id_to_token(token_id)

    def render_chat(self, messages: list[dict], add_generation_prompt: bool = True) -> str:
        if self._template is None:
            raise ValueError("this model has no chat template")
        bos = None if self.bos_token_id is None else self.backend.id_to_token(self.bos_token_id)
        eos = self.backend.id_to_token(min(self.eos_token_ids))
        return self._template.render(messages=messages, add_generation_prompt=add_generation_prompt,
                                     bos_token=bos or "", eos_token=eos or "")

    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True) -> list[int]:
        return self.encode(self.render_chat(messages, add_generation_prompt))
