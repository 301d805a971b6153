"""Tollgate's inference workers. The public names load on first use, so `import workers` stays cheap."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy names are, for the type checker
    from workers.config import EngineConfig
    from workers.engine.async_engine import AsyncEngine
    from workers.llm import LLM
    from workers.outputs import CompletionOutput, RequestOutput, TokenLogprob
    from workers.sampling_params import SamplingParams
    from workers.structured.spec import StructuredOutput

_EXPORTS = {
    "LLM": "workers.llm",
    "SamplingParams": "workers.sampling_params",
    "StructuredOutput": "workers.structured.spec",
    "EngineConfig": "workers.config",
    "AsyncEngine": "workers.engine.async_engine",
    "RequestOutput": "workers.outputs",
    "CompletionOutput": "workers.outputs",
    "TokenLogprob": "workers.outputs",
}

__all__ = ["LLM", "AsyncEngine", "CompletionOutput", "EngineConfig", "RequestOutput", "SamplingParams",
           "StructuredOutput", "TokenLogprob"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'workers' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
