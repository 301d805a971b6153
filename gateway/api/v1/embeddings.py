"""POST /v1/embeddings: billed by input tokens, limited like any other request."""
from __future__ import annotations

import asyncio
import base64
import time
from datetime import UTC, datetime

import anyio
from fastapi import APIRouter, Request, Response

from gateway.api.deps import TenantDep, key_allows_model
from gateway.services import AppServices
from gateway.api.errors import APIError, model_not_found, no_capacity, permission_denied
from gateway.api.v1.body import EmbeddingBody
from gateway.billing.ledger import UsageRecord
from gateway.limits.errors import LimitError
from gateway.schemas.openai import Embedding, EmbeddingList, Usage

router = APIRouter()


@router.post("/embeddings")
async def create_embeddings(principal: TenantDep, body: EmbeddingBody, services: AppServices,
                            request: Request, response: Response) -> EmbeddingList:
    """Embed one text or a list of texts."""
    started = time.perf_counter()
    if body.model not in services.catalogue.embeddings:
        raise model_not_found(body.model)
    if not key_allows_model(principal, body.model):
        raise permission_denied(f"This API key may not use the model `{body.model}`.")
    embedder = services.embedder  # loaded for the semantic cache too, so ask the setting
    if embedder is None or not services.settings.embeddings_enabled:
        raise no_capacity("Embeddings are not enabled on this gateway.")
    inputs = body.inputs()
    tokens = await asyncio.to_thread(embedder.count_tokens, inputs)
    try:
        reservation = await services.limiter.reserve(principal, tokens)
    except (APIError, LimitError) as e:
        services.metrics.rejections.labels(principal.tenant_id, e.code or e.type).inc()
        raise
    try:
        vectors = await asyncio.to_thread(embedder.embed, inputs)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await services.limiter.settle(reservation, 0)
        raise
    await services.limiter.settle(reservation, tokens)
    latency_s = time.perf_counter() - started
    services.ledger.record(UsageRecord(
        request_id=request.state.request_id, tenant_id=principal.tenant_id, key_id=principal.key_id,
        endpoint="/v1/embeddings", model=body.model, prompt_tokens=tokens, latency_ms=round(latency_s * 1000, 3),
        status="ok", created_at=datetime.now(UTC)))
    cost = services.prices.cost(body.model, prompt_tokens=tokens, completion_tokens=0)
    services.metrics.record_usage(principal.tenant_id, body.model, prompt=tokens, completion=0, cached=0,
                                  cost=float(cost))
    services.metrics.requests.labels(principal.tenant_id, body.model, "/v1/embeddings", "ok").inc()
    services.metrics.latency.labels(body.model, "/v1/embeddings").observe(latency_s)
    b64 = body.encoding_format == "base64"
    data = [Embedding(index=i, embedding=base64.b64encode(v.astype("<f4").tobytes()).decode() if b64 else v.tolist())
            for i, v in enumerate(vectors)]
    response.headers.update(reservation.headers)
    return EmbeddingList(data=data, model=body.model, usage=Usage(prompt_tokens=tokens, total_tokens=tokens))
