"""The tenant-facing, OpenAI-compatible API under /v1."""
from __future__ import annotations

from fastapi import APIRouter

from gateway.api.v1 import batches, chat, completions, embeddings, messages, models, responses, usage

router = APIRouter(prefix="/v1", tags=["v1"])
for module in (chat, completions, embeddings, models, responses, usage, batches, messages):
    router.include_router(module.router)
