"""Session fixtures for tests that load the real SmolLM2 model: loaded once, shared by every test."""
from __future__ import annotations

import contextlib
import functools
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the reference model is read from the local GGUF file only


@contextlib.contextmanager
def _gguf_read_once():
    """While transformers loads from GGUF: it reads the file's header twice (gguf.GGUFReader, ~2.7 s each on the
    2-core box) and builds gguf's tensor-name map once per tensor (~5 s in all); here each is made once. The
    values are the same: only repeated work is skipped."""
    import gguf

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gguf, "GGUFReader", functools.lru_cache(maxsize=1)(gguf.GGUFReader))
        patch.setattr(gguf, "get_tensor_name_map", functools.lru_cache(maxsize=4)(gguf.get_tensor_name_map))
        yield


@pytest.fixture(scope="session")
def gguf_path():
    from workers.model.registry import CATALOGUE

    return CATALOGUE["smollm2-135m-instruct"].path()


@pytest.fixture(scope="session")
def model_runner():
    """Our runner on the real model, float32, on this worker's share of the cores (tests/cores.py); tests may
    reuse its KV pool freely."""
    from tests.cores import ENGINE_THREADS
    from workers.config import EngineConfig
    from workers.engine.model_runner import ModelRunner

    return ModelRunner(EngineConfig(num_kv_blocks=512, num_threads=ENGINE_THREADS))


@pytest.fixture(scope="session")
def dense_runner():
    """The same model on the plain PyTorch path: dense float32 weights (oneDNN), no compiled kernels."""
    from tests.cores import ENGINE_THREADS
    from workers.config import EngineConfig
    from workers.engine.model_runner import ModelRunner

    return ModelRunner(EngineConfig(num_kv_blocks=128, num_threads=ENGINE_THREADS, kernels="torch"))


def load_hf_model(gguf_path):
    """transformers' Llama on the same GGUF, dequantized by transformers: the reference, never the serving path."""
    import torch
    from transformers import AutoModelForCausalLM

    with _gguf_read_once():
        return AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name,
                                                    dtype=torch.float32).eval()


@pytest.fixture(scope="session")
def hf_model(gguf_path):
    return load_hf_model(gguf_path)


@pytest.fixture(scope="session")
def hf_tokenizer(gguf_path):
    from transformers import AutoTokenizer

    with _gguf_read_once():
        return AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)


@pytest.fixture(scope="session")
def hf_references(request, gguf_path, model_runner):
    """HF greedy generations for the reference prompts: the stored ones (tests/workers/hf_references.json) when
    they were made from this GGUF file for these prompts, else generated once per session."""
    from tests.workers.reference import (REFERENCE_NEW_TOKENS, fingerprint, greedy_references, load_stored,
                                         templated_prompts)

    tok = model_runner.tokenizer
    prompts = templated_prompts(tok)
    stored = load_stored(fingerprint(gguf_path, prompts, REFERENCE_NEW_TOKENS))
    if stored is not None:
        return stored
    return greedy_references(request.getfixturevalue("hf_model"), tok, prompts)


@pytest.fixture(scope="session")
def real_llm():
    """The offline engine over the real model (its own runner and KV pool: 64 blocks of 16)."""
    from workers.llm import LLM

    return LLM("smollm2-135m-instruct", num_kv_blocks=64, num_threads=1)
