"""POST /v1/embeddings: the same pipeline as generation — admitted on a bound of its tokens before any
tokenizing, counted and embedded off the event loop, billed by input tokens through Run.finish."""
from __future__ import annotations

import asyncio
import base64
import time

import numpy
from fastapi import APIRouter, Request, Response

from gateway.api.deps import TenantDep
from gateway.security.principal import key_allows_model
from gateway.domain.errors import invalid_request, model_not_found, no_capacity, permission_denied
from gateway.api.v1.body import EmbeddingBody, documented
from gateway.api.v1.pipeline.admit import reserve_tokens
from gateway.api.v1.pipeline.generate import upstream_refused
from gateway.api.v1.pipeline.guard import HEADER as GUARDRAILS_HEADER
from gateway.api.v1.pipeline.guard import screen_texts
from gateway.api.v1.pipeline.respond import status_of
from gateway.api.v1.pipeline.run import Run
from gateway.schemas.openai import Embedding, EmbeddingList, EmbeddingRequest, Usage
from gateway.serving.base import UpstreamRefused
from gateway.services import Services
from gateway.services.deps import ServicesDep
from gateway.upstreams.tokens import TokenCounter

router = APIRouter()

# Tokens a text may take beyond one per UTF-8 byte: the tokenizer's own markers around it.
_MARKERS_PER_TEXT = 2


@router.post("/embeddings", openapi_extra=documented(EmbeddingRequest))
async def create_embeddings(principal: TenantDep, body: EmbeddingBody, services: ServicesDep,
                            request: Request, response: Response) -> EmbeddingList:
    """Embed one text or a list of texts."""
    answer, headers = await embed(services, principal, body, request.state.request_id)
    response.headers.update(headers)
    return answer


async def embed(services: Services, principal, body: EmbeddingRequest, request_id: str, *,
                kind: str = "interactive") -> tuple[EmbeddingList, dict[str, str]]:
    """The embeddings pipeline for one request, HTTP or a Batch API line (kind "batch"): the answer and
    its rate-limit headers."""
    started = time.perf_counter()
    spec = services.catalogue.embeddings.get(body.model)
    if spec is None:
        raise model_not_found(body.model)
    if not key_allows_model(principal, body.model):
        raise permission_denied(f"This API key may not use the model `{body.model}`.")
    if spec.upstream is not None:
        return await embed_upstream(services, principal, body, request_id, started, kind=kind)
    embedder = services.embedder  # loaded for the semantic cache too, so ask the setting
    if embedder is None or not services.settings.embeddings_enabled:
        raise no_capacity("Embeddings are not enabled on this gateway.")
    services.ledger.ensure_room()
    inputs, fired = await screen_texts(services, principal, body.model, body.inputs())  # redacted before counted
    bound = sum(len(text.encode()) + _MARKERS_PER_TEXT for text in inputs)
    reservation = await reserve_tokens(services, principal, bound)
    run = Run(services, principal, request_id, endpoint="/v1/embeddings", model=body.model,
              reservation=reservation, started=started, kind=kind)
    try:
        run.prompt_tokens = await asyncio.to_thread(embedder.count_tokens, inputs)
        vectors = await asyncio.to_thread(embedder.embed, inputs)
        run.embedded()
    except BaseException as e:
        run.finish(status_of(e))
        raise
    await run.finish_durably("ok")
    return _answer(body, vectors, run.prompt_tokens), \
        {**reservation.headers, **({GUARDRAILS_HEADER: fired[:1024]} if fired else {})}


async def embed_upstream(services: Services, principal, body: EmbeddingRequest, request_id: str, started: float, *,
                         kind: str) -> tuple[EmbeddingList, dict[str, str]]:
    """An embedding model an external upstream serves: the same admission and billing; the upstream's reported
    tokens are billed, else the gateway's count (the ledger line says which)."""
    spec = services.catalogue.embeddings[body.model]
    services.ledger.ensure_room()
    inputs, fired = await screen_texts(services, principal, body.model, body.inputs())
    bound = sum(len(text.encode()) + _MARKERS_PER_TEXT for text in inputs)
    reservation = await reserve_tokens(services, principal, bound)
    run = Run(services, principal, request_id, endpoint="/v1/embeddings", model=body.model,
              reservation=reservation, started=started, kind=kind)
    try:
        try:
            vectors, reported = await services.upstreams.backend.embed(spec.upstream, spec.model, inputs,
                                                                        dimensions=body.dimensions)
        except UpstreamRefused as e:
            raise upstream_refused(e) from None
        except ValueError as e:
            raise invalid_request(str(e)) from None
        counter = TokenCounter()
        run.prompt_tokens = reported if reported is not None else sum(counter.count_text(t) for t in inputs)
        run.metered_by = "upstream" if reported is not None else "gateway"
        run.embedded()
    except BaseException as e:
        run.finish(status_of(e))
        raise
    await run.finish_durably("ok")
    return _answer(body, [numpy.asarray(v, dtype="<f4") for v in vectors], run.prompt_tokens), \
        {**reservation.headers, **({GUARDRAILS_HEADER: fired[:1024]} if fired else {})}


def _answer(body: EmbeddingRequest, vectors, prompt_tokens: int) -> EmbeddingList:
    b64 = body.encoding_format == "base64"
    data = [Embedding(index=i, embedding=base64.b64encode(v.astype("<f4").tobytes()).decode() if b64 else v.tolist())
            for i, v in enumerate(vectors)]
    return EmbeddingList(data=data, model=body.model, usage=Usage(prompt_tokens=prompt_tokens,
                                                                  total_tokens=prompt_tokens))
