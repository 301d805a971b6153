"""Tollgate's inference workers. The public names load on first use, so `import workers` stays cheap."""
from __future__ import annotations

import importlib

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

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'workers' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
