"""The pipeline chat and completions share. Each step does one thing:

    screen:  route the model -> check the key may use it -> count and validate the prompt
    (cache:  chat only: a semantic-cache lookup, gateway/api/v1/cached.py; a hit is replayed
             from there and never reaches `open`)
    reserve: the worst case against the limits (a hit: exactly the cached answer's tokens)
    open:    start the generation on the first version that can take it
    respond: collect it, or stream it as SSE (metered against the month's budget)
    finish:  settle the reservation to what was used, one ledger row, metrics, route feedback
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import anyio
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel

from gateway.api.errors import APIError, invalid_request, model_not_found, no_capacity, permission_denied
from gateway.billing.ledger import UsageRecord
from gateway.limits.errors import LimitError
from gateway.limits.limiter import Reservation
from gateway.routing.errors import RoutingError, UnknownModel
from gateway.schemas.openai import ChatCompletionRequest, CompletionRequest, Usage
from gateway.serving.base import (GenerationChunk, GenerationFailed, GenerationRequest, TenantQueueFull,
                                  VersionOverloaded, VersionUnavailable)
from gateway.services import Services

log = logging.getLogger("tollgate.generation")


def gateway_timeout() -> APIError:
    return APIError(504, "The model did not answer in time.", type="server_error", code="timeout")


def generation_failed() -> APIError:
    return APIError(502, "The model failed while generating; please retry.", type="server_error",
                    code="generation_failed")


@dataclass(slots=True)
class Job:
    """A validated generation request, the same for chat and completions."""

    endpoint: str  # "/v1/chat/completions" | "/v1/completions"
    model: str  # the name the tenant called (an alias, a model or a version)
    prompt: str | None
    messages: list[dict] | None
    max_tokens: int | None
    temperature: float
    top_p: float
    seed: int | None
    stop: list[str]
    stream: bool
    include_usage: bool
    user: str | None

    @classmethod
    def from_chat(cls, body: ChatCompletionRequest) -> "Job":
        return cls("/v1/chat/completions", body.model, None, body.engine_messages(), body.token_limit,
                   _or(body.temperature, 1.0), _or(body.top_p, 1.0), body.seed, body.stop_list(),
                   bool(body.stream), body.include_usage, body.user)

    @classmethod
    def from_completion(cls, body: CompletionRequest) -> "Job":
        return cls("/v1/completions", body.model, body.prompt_text(), None, body.token_limit,
                   _or(body.temperature, 1.0), _or(body.top_p, 1.0), body.seed, body.stop_list(),
                   bool(body.stream), body.include_usage, body.user)


def _or(value, default):
    return default if value is None else value


@dataclass(slots=True, frozen=True)
class Admission:
    """A request that passed routing, the key's model list and validation; nothing reserved yet."""

    job: Job
    model: str  # the priced model the router chose
    candidates: list[str]  # versions to try, in order
    pinned: bool  # the client named the version (x-tollgate-version or a version name)
    prompt_tokens: int
    max_tokens: int
    started: float  # perf_counter at arrival


class Run:
    """One admitted request: what it reserved, which version serves it, what it has produced.
    `finish` runs exactly once, whatever way the request ends."""

    def __init__(self, services: Services, principal, request_id: str, admission: Admission,
                 reservation: Reservation) -> None:
        self.svc, self.principal, self.request_id, self.job = services, principal, request_id, admission.job
        self.model, self.candidates = admission.model, admission.candidates
        self.max_tokens, self.reservation = admission.max_tokens, reservation
        self.started = admission.started
        self.deadline = admission.started + services.settings.request_timeout_s
        self.version: str | None = None
        self.prompt_tokens = admission.prompt_tokens
        self.completion_tokens = 0
        self.cached_tokens = 0
        self.produced = False
        self.cache_hit = False
        self.cache_status, self.cache_score = "bypass", None  # x-tollgate-cache[-score]
        self.ttft_s: float | None = None
        self._finished = False
        services.drain.enter()

    @property
    def served_as(self) -> str:
        """The version that generated the answer, or the model for a cache hit."""
        return self.version or self.model

    def remaining_s(self) -> float:
        return max(0.0, self.deadline - time.perf_counter())

    def began(self, version: str, first: GenerationChunk) -> None:
        """The engine took the prompt: from here on the request is billed."""
        self.version, self.produced = version, True
        self.ttft_s = time.perf_counter() - self.started
        self.prompt_tokens, self.cached_tokens = first.prompt_tokens, first.cached_tokens

    def replayed(self, completion_tokens: int, score: float | None) -> None:
        """The semantic cache answered: billed, at the model's cache prices, with every prompt
        token counted as cached (this request's prompt, not the stored question's)."""
        self.produced, self.cache_hit = True, True
        self.completion_tokens, self.cached_tokens = completion_tokens, self.prompt_tokens
        self.cache_status, self.cache_score = "hit", score

    def observe(self, chunk: GenerationChunk) -> None:
        """`chunk` was (or is about to be) handed to the client."""
        self.completion_tokens = chunk.completion_tokens

    async def within_budget(self, chunk: GenerationChunk) -> bool:
        """Meter a stream: take more of the month's budget when this chunk needs it."""
        res = self.reservation
        need = chunk.prompt_tokens + chunk.completion_tokens
        if need <= res.budget_granted:
            return True
        ask = max(need - res.budget_granted, min(32, res.tokens - res.budget_granted))
        await self.svc.limiter.extend(res, ask)
        return need <= res.budget_granted

    @property
    def billed_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens if self.produced else 0

    def usage(self) -> Usage:
        return Usage(prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens,
                     total_tokens=self.prompt_tokens + self.completion_tokens,
                     prompt_tokens_details={"cached_tokens": self.cached_tokens})

    def finish(self, status: str) -> None:
        """Bill it (one ledger row, if the engine took the prompt), settle its reservation, and
        report it to metrics and the router. Never awaits, so it is safe in any cleanup path."""
        if self._finished:
            return
        self._finished = True
        svc, latency_s = self.svc, time.perf_counter() - self.started
        try:
            # Settling only returns unused tokens to the limits: the client need not wait for it.
            svc.drain.spawn(svc.limiter.settle(self.reservation, self.billed_tokens))
            model = svc.model_of(self.version) if self.version else self.model
            if self.produced:
                svc.ledger.record(UsageRecord(
                    request_id=self.request_id, tenant_id=self.principal.tenant_id,
                    key_id=self.principal.key_id, endpoint=self.job.endpoint, model=model,
                    version=self.version, prompt_tokens=self.prompt_tokens,
                    completion_tokens=self.completion_tokens, cached_tokens=self.cached_tokens,
                    cache_hit=self.cache_hit, latency_ms=round(latency_s * 1000, 3),
                    ttft_ms=None if self.ttft_s is None else round(self.ttft_s * 1000, 3),
                    status=status, created_at=datetime.now(UTC)))
                cost = svc.prices.cost(model, prompt_tokens=self.prompt_tokens,
                                       completion_tokens=self.completion_tokens, cached_tokens=self.cached_tokens,
                                       cache_hit=self.cache_hit)
                svc.metrics.record_usage(self.principal.tenant_id, model, prompt=self.prompt_tokens,
                                         completion=self.completion_tokens, cached=self.cached_tokens,
                                         cost=float(cost))
            svc.metrics.requests.labels(self.principal.tenant_id, model, self.job.endpoint, status).inc()
            svc.metrics.latency.labels(model, self.job.endpoint).observe(latency_s)
            if self.ttft_s is not None:
                svc.metrics.ttft.labels(model).observe(self.ttft_s)
            if self.version is not None:
                svc.router.observe(self.version, ok=status in _HEALTHY, ttft_s=self.ttft_s, latency_s=latency_s)
        finally:
            svc.drain.leave()
            log.info("generation finished", extra={"status": status, "version": self.version,
                                                   "cache": self.cache_status,
                                                   "prompt_tokens": self.prompt_tokens,
                                                   "completion_tokens": self.completion_tokens})


_HEALTHY = {"ok", "aborted", "truncated"}  # outcomes that say nothing bad about the version


async def admit(svc: Services, principal, request_id: str, job: Job, *, pin: str | None,
                session: str | None) -> Run:
    """Screen, then reserve the worst case: the whole pipeline's front for uncached requests."""
    admission = screen(svc, principal, request_id, job, pin=pin, session=session)
    return await reserve(svc, principal, request_id, admission)


def screen(svc: Services, principal, request_id: str, job: Job, *, pin: str | None,
           session: str | None) -> Admission:
    """Everything a request must pass before it may cost anything; raises the client's error."""
    started = time.perf_counter()
    if not svc.drain.accepting:
        raise no_capacity("The gateway is shutting down; retry on another instance.")
    try:
        decision = svc.router.resolve(job.model, request_id=request_id, user=job.user or session, pin=pin)
    except UnknownModel:
        raise model_not_found(job.model) from None
    except RoutingError as e:
        raise invalid_request(str(e), param=e.param) from None
    allowed = principal.key_models
    if allowed is not None and job.model not in allowed and decision.model not in allowed and decision.alias not in allowed:
        raise permission_denied(f"This API key may not use the model `{job.model}`.")
    loaded = svc.loaded_versions()
    counting = next((v for v in decision.candidates if v in loaded), None)
    if counting is None:
        raise no_capacity()
    try:
        prompt_tokens = svc.backend.count_prompt_tokens(counting, prompt=job.prompt, messages=job.messages)
    except ValueError as e:
        raise invalid_request(str(e), param="messages" if job.messages is not None else "prompt") from None
    max_tokens = _max_tokens(job, prompt_tokens, loaded[counting].max_model_len, svc.settings.default_max_tokens)
    return Admission(job, decision.model, decision.candidates, decision.pinned, prompt_tokens, max_tokens, started)


async def reserve(svc: Services, principal, request_id: str, admission: Admission, *,
                  completion_tokens: int | None = None) -> Run:
    """Charge the request against RPM, TPM and the month's budget.

    Generating reserves the worst case (prompt + max_tokens; a stream may start on less budget
    and meter the rest). A cache hit passes `completion_tokens`, the cached answer's: its cost
    is known, so it reserves exactly that, all of it up front."""
    prompt_tokens = admission.prompt_tokens
    if completion_tokens is None:
        est = prompt_tokens + admission.max_tokens
        least = prompt_tokens + 1 if admission.job.stream else None
    else:
        est, least = prompt_tokens + completion_tokens, None
    try:
        reservation = await svc.limiter.reserve(principal, est, min_tokens=least)
    except (APIError, LimitError) as e:
        svc.metrics.rejections.labels(principal.tenant_id, e.code or e.type).inc()
        raise
    return Run(svc, principal, request_id, admission, reservation)


def _max_tokens(job: Job, prompt_tokens: int, max_model_len: int, default: int) -> int:
    room = max_model_len - prompt_tokens
    param = "max_tokens"
    if room < 1:
        raise invalid_request(f"The prompt is {prompt_tokens} tokens; this model's context is {max_model_len}.",
                              param="messages" if job.messages is not None else "prompt",
                              code="context_length_exceeded")
    if job.max_tokens is None:
        return min(default, room)
    if job.max_tokens > room:
        raise invalid_request(f"max_tokens ({job.max_tokens}) plus the prompt ({prompt_tokens} tokens) exceeds "
                              f"this model's context of {max_model_len} tokens.", param=param,
                              code="context_length_exceeded")
    return job.max_tokens


async def open_generation(run: Run) -> tuple[AsyncIterator[GenerationChunk], GenerationChunk]:
    """Start on the first candidate version that takes the request; returns it with its first chunk."""
    job, svc = run.job, run.svc
    for version in run.candidates:
        if version not in svc.loaded_versions():
            continue
        stream = svc.backend.stream(GenerationRequest(
            request_id=run.request_id, version=version, prompt=job.prompt, messages=job.messages,
            max_tokens=run.max_tokens, temperature=job.temperature, top_p=job.top_p, seed=job.seed,
            stop=job.stop, cache_salt=svc.salter.salt(run.principal.tenant_id)))
        try:
            async with asyncio.timeout(run.remaining_s()):
                first = await anext(stream)
        except (VersionUnavailable, VersionOverloaded) as e:
            await stream.aclose()
            svc.router.observe(version, ok=False, ttft_s=None, latency_s=time.perf_counter() - run.started)
            log.warning("version refused the request, trying the next", extra={"version": version, "why": str(e)})
            continue
        except TenantQueueFull:
            await stream.aclose()
            raise APIError(429, "Too many of your requests are already waiting for this model; retry shortly.",
                           type="rate_limit_error", code="too_many_queued_requests",
                           headers={"Retry-After": "1"}) from None
        except ValueError as e:
            await stream.aclose()
            raise invalid_request(str(e)) from None
        except TimeoutError:
            await stream.aclose()
            run.version = version
            raise gateway_timeout() from None
        except (StopAsyncIteration, GenerationFailed):
            await stream.aclose()
            run.version = version
            raise generation_failed() from None
        run.began(version, first)
        return stream, first
    raise no_capacity()


class Format(Protocol):
    """How a pipeline's output is spelled on the wire (chat and completions differ only here)."""

    def opening(self) -> BaseModel | None: ...

    def delta(self, text: str, finish_reason: str | None) -> BaseModel: ...

    def usage_chunk(self) -> BaseModel: ...

    def complete(self, text: str, finish_reason: str | None) -> BaseModel: ...


# Told of every generation that ran to an end of its own: (run, the whole text, finish_reason).
# Must not block: the response is still being sent.
Keep = Callable[[Run, str, str | None], None]


def response_id(run: Run, prefix: str) -> str:
    return f"{prefix}-{run.request_id.removeprefix('req_')}"


def headers(run: Run) -> dict[str, str]:
    out = {**run.reservation.headers, "x-tollgate-model": run.served_as, "x-tollgate-cache": run.cache_status}
    if run.cache_score is not None:
        out["x-tollgate-cache-score"] = f"{run.cache_score:.4f}"
    return out


async def respond(run: Run, fmt_factory: Callable[[Run], Format], *, keep: Keep | None = None):
    """Open the generation, then answer it whole or as a stream; the run is finished either way."""
    try:
        stream, first = await open_generation(run)
    except BaseException as e:
        run.finish(_status_of(e))
        raise
    fmt = fmt_factory(run)
    if run.job.stream:
        return StreamingResponse(_sse(run, stream, first, fmt, keep), media_type="text/event-stream",
                                 headers={**headers(run), "cache-control": "no-cache"})
    return await _collect(run, stream, first, fmt, keep)


def _status_of(e: BaseException) -> str:
    if isinstance(e, APIError):
        return "error" if e.status >= 500 else "refused"
    return "aborted" if isinstance(e, asyncio.CancelledError) else "error"


async def _collect(run: Run, stream: AsyncIterator[GenerationChunk], first: GenerationChunk, fmt: Format,
                   keep: Keep | None):
    parts, finish_reason, status = [first.text], first.finish_reason, "error"
    run.observe(first)
    try:
        async with asyncio.timeout(run.remaining_s()):
            async for chunk in stream:
                run.observe(chunk)
                parts.append(chunk.text)
                finish_reason = chunk.finish_reason or finish_reason
        status = "ok"
    except TimeoutError:
        raise gateway_timeout() from None
    except GenerationFailed:
        raise generation_failed() from None
    finally:
        with anyio.CancelScope(shield=True):
            await stream.aclose()
        run.finish(status)
    text = "".join(parts)
    if keep is not None:
        keep(run, text, finish_reason)
    return JSONResponse(fmt.complete(text, finish_reason).model_dump(mode="json"), headers=headers(run))


def sse_event(payload: BaseModel | dict) -> str:
    body = payload.model_dump_json() if isinstance(payload, BaseModel) else json.dumps(payload)
    return f"data: {body}\n\n"


async def _sse(run: Run, stream: AsyncIterator[GenerationChunk], first: GenerationChunk, fmt: Format,
               keep: Keep | None):
    status, error = "aborted", None  # "aborted" until the stream reaches an end of its own
    chunk: GenerationChunk | None = first
    parts: list[str] = []
    try:
        opening = fmt.opening()
        if opening is not None:
            yield sse_event(opening)
        try:
            while chunk is not None:
                if not await run.within_budget(chunk):
                    status, error = "truncated", _quota_ran_out()
                    break
                run.observe(chunk)
                parts.append(chunk.text)
                if chunk.text or chunk.finish_reason:
                    yield sse_event(fmt.delta(chunk.text, chunk.finish_reason))
                if chunk.finish_reason is not None:
                    status = "ok"
                    if keep is not None:
                        keep(run, "".join(parts), chunk.finish_reason)
                    break
                async with asyncio.timeout(run.remaining_s()):
                    chunk = await anext(stream, None)
            else:
                raise GenerationFailed("the generation ended without a finish reason")
        except TimeoutError:
            status, error = "error", gateway_timeout()
        except GenerationFailed:
            status, error = "error", generation_failed()
        except Exception:
            # Headers are gone: the client learns of it in the stream, the operator in the log.
            log.exception("stream failed")
            status, error = "error", APIError(500, "The server had an error while streaming.", type="server_error")
        # Usage first: an SDK stops reading at an error event, and the client should still
        # learn what it is billed for.
        if run.job.include_usage:
            yield sse_event(fmt.usage_chunk())
        if error is not None:
            yield sse_event(error.body())
        yield "data: [DONE]\n\n"
    finally:
        # Runs on a normal end, and when the client leaves (the task is cancelled): abort the
        # generation so the engine frees its blocks, then bill what was generated so far.
        with anyio.CancelScope(shield=True):
            await stream.aclose()
        run.finish(status)


def _quota_ran_out() -> APIError:
    return APIError(429, "You exceeded your current quota: the month's token budget ran out during this response.",
                    type="insufficient_quota", code="insufficient_quota")
