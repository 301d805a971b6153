"""The semantic cache in the chat pipeline: look up once admitted, replay a hit, keep a fresh answer.

A hit never reaches the engine. It is still a billed request: it was admitted like any other (RPM, TPM and
the month's budget charged its worst case before the lookup, so a tenant over its limits costs no
embedding), and settling charges exactly its tokens (this request's prompt plus the cached completion). One
ledger row with cache_hit=True and every prompt token cached prices it at the model's cache prices.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from fastapi.responses import JSONResponse, StreamingResponse

from gateway.api.v1.pipeline.choices import Choice
from gateway.api.v1.pipeline.guard import as_api_error
from gateway.api.v1.pipeline.output_guard import OutputGuard
from gateway.api.v1.pipeline.respond import Format, Keep, headers, sse_event
from gateway.api.v1.pipeline.run import Run
from gateway.cache import (
    CachedAnswer,
    CacheLookup,
    CacheRequest,
    SemanticCache,
    TenantCachePolicy,
)
from gateway.cache.from_chat import cache_request, tenant_policy
from gateway.cache.truncation import token_ends
from gateway.guardrails.errors import ContentBlocked, GuardrailFailed
from gateway.schemas.openai import ChatCompletionRequest
from gateway.services import Services
from gateway.serving.base import CompletionDelta, GenerationRequest

log = logging.getLogger("tollgate.cache")

_WORDS = re.compile(r"\S+\s*|\s+")  # a replayed stream's pieces; joined they are the text again


@dataclass(slots=True, frozen=True)
class CacheStep:
    """What the cache said about one request, and what storing its answer needs."""

    lookup: CacheLookup
    request: CacheRequest | None = None  # None: the cache was not consulted
    policy: TenantCachePolicy | None = None

    @property
    def hit(self) -> bool:
        return self.lookup.status == "hit" and self.lookup.entry is not None


def key_of(tenant_id: str, body: ChatCompletionRequest, run: Run) -> CacheRequest:
    """The body's cache request, keyed on the priced model the router chose (so an alias and
    its model share answers); a pinned version keeps its own answers."""
    request = cache_request(tenant_id, body)
    extra = dict(request.extra_params or {})
    if run.pinned:
        extra["version"] = run.candidates[0]
    # A limit the tenant's output cap or default set: a replayed answer is cut to it, like a generated one.
    limit = request.max_tokens if run.plan_max_tokens is None else run.plan_max_tokens
    return dataclasses.replace(request, model=run.model, extra_params=extra or None, max_tokens=limit)


async def consult(svc: Services, principal, body: ChatCompletionRequest, run: Run) -> CacheStep:
    """Look the request up under its tenant's policy; a failing cache is logged and bypassed."""
    cache: SemanticCache | None = svc.cache
    if cache is None:
        return CacheStep(CacheLookup("bypass", reason="off"))
    request = key_of(principal.tenant_id, body, run)
    policy = tenant_policy(cache.config, principal)
    try:
        lookup = await cache.lookup(request, policy)
    except Exception:
        # The cache only saves work: a broken one must not fail the request; generate instead.
        log.exception("semantic cache lookup failed; generating", extra={"tenant": principal.tenant_id})
        return CacheStep(CacheLookup("bypass", reason="error"))
    if lookup.status == "hit" and lookup.entry is not None and run.candidates:
        cache.live_check.maybe_check(request.tenant_id, lookup.entry.text,
                                     partial(regenerate, svc, run.candidates[0], request, lookup.entry))
    return CacheStep(lookup, request, policy)


async def regenerate(svc: Services, version: str, request: CacheRequest, served: CachedAnswer) -> str:
    """The model's own answer to a request the cache served, for the live check: straight from the backend,
    so no ledger row and no limits (billed to nobody)."""
    limit = request.max_tokens or served.completion_tokens + 64
    stop = [request.stop] if isinstance(request.stop, str) else list(request.stop or [])
    generation = GenerationRequest(
        request_id=f"cache-check-{uuid.uuid4().hex}", version=version, messages=request.messages,
        max_tokens=limit, temperature=request.temperature, top_p=1.0 if request.top_p is None else request.top_p,
        seed=request.seed, stop=stop, priority=1,  # behind interactive work
        # The tenant's own prefix-cache salt: the check shares engine blocks with nobody else.
        cache_salt=svc.salter.salt(request.tenant_id), tenant=svc.salter.tenant_key(request.tenant_id))
    parts = []
    stream = svc.backend.stream(generation)
    try:
        async for chunk in stream:
            parts.append(chunk.text)
    finally:
        await stream.aclose()
    return "".join(parts)


def keeper(svc: Services, step: CacheStep) -> Keep | None:
    """Store a miss's answer once it is complete, off the response path (shutdown drains it); exact repeats
    are served from the moment it is complete (SemanticCache.hold).
    The cache itself refuses what must not be replayed (finish_reason other than "stop" or "length")."""
    if step.request is None or step.lookup.status != "miss":
        return None
    cache, request, policy = svc.cache, step.request, step.policy

    def keep(run: Run, text: str, finish_reason: str | None, token_ids: list[int]) -> None:
        if finish_reason is None or run.version is None or svc.model_of(run.version) != request.model:
            return  # no answer, or a fallback to another model gave it: not this model's to keep
        # Before the answer's end goes out: an exact repeat sent the moment it arrives is served (read-your-writes).
        cache.hold(request, policy, text, run.prompt_tokens, run.completion_tokens, finish_reason)
        svc.drain.spawn(_store(svc, run.version, request, policy, text, run.prompt_tokens, run.completion_tokens,
                               finish_reason, list(token_ids)))
    return keep


async def _store(svc: Services, version: str, request: CacheRequest, policy: TenantCachePolicy, text: str,
                 prompt_tokens: int, completion_tokens: int, finish_reason: str, token_ids: list[int]) -> None:
    """Where each token ends (so smaller max_tokens can be served by a cut), then the entry."""
    ends: tuple[int, ...] = ()
    if len(token_ids) == completion_tokens:
        try:
            ends = await asyncio.to_thread(token_ends, partial(svc.backend.detokenize, version), token_ids, text)
        except Exception:
            log.warning("semantic cache: no token offsets for an answer; it serves only limits that need no cut",
                        exc_info=True)
    await svc.cache.store(request, policy, text, prompt_tokens, completion_tokens, finish_reason, ends)


async def replay(run: Run, fmt_factory: Callable[[Run], Format], lookup: CacheLookup):
    """The cached answer, whole or as a stream of the same chunks a generation sends; billed as a hit."""
    answer, fmt = lookup.entry, fmt_factory(run)
    run.replayed(answer.completion_tokens, lookup.score)
    text = await _guarded(run, answer.text)
    if run.job.stream:
        return StreamingResponse(_replay_sse(run, fmt, text, answer.finish_reason),
                                 media_type="text/event-stream", headers={**headers(run), "cache-control": "no-cache"})
    try:
        body = fmt.complete([Choice(0, [text], finish_reason=answer.finish_reason)]).model_dump(mode="json")
    except BaseException:
        run.finish("error")
        raise
    await run.finish_durably("ok")
    return JSONResponse(body, headers=headers(run))


async def _guarded(run: Run, text: str) -> str:
    """A cached answer through today's output rules (they may have changed since it was stored); a block is
    refused before anything is sent, and billed as the hit it was."""
    guard = OutputGuard.of(run)
    if guard is None:
        return text
    try:
        return guard.choices([Choice(0, [text])])[0].text
    except (ContentBlocked, GuardrailFailed) as e:
        await run.finish_durably("blocked")
        raise as_api_error(e) from None
    finally:
        guard.report()


async def _replay_sse(run: Run, fmt: Format, text: str, finish_reason: str):
    status = "aborted"  # until the last piece is out
    try:
        opening = fmt.opening()
        if opening is not None:
            yield sse_event(opening)
        pieces = _WORDS.findall(text) or [""]
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            yield sse_event(fmt.delta([CompletionDelta(0, piece, [], finish_reason if last else None)], None))
        status = "ok"
        await run.finish_durably(status)  # durable before the client hears its usage
        if run.job.include_usage:
            yield sse_event(fmt.usage_chunk())
        yield "data: [DONE]\n\n"
    finally:
        run.finish(status)
