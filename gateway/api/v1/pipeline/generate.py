"""Start a run's generation on the first candidate version that takes it."""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator

import anyio

from gateway.domain.errors import APIError, invalid_request, no_capacity
from gateway.api.v1.pipeline.run import Run
from gateway.security.principal import reserved_rate
from gateway.serving.base import (GenerationChunk, GenerationFailed, GenerationRequest, TenantQueueFull,
                                  UpstreamRefused, VersionOverloaded, VersionUnavailable)

log = logging.getLogger("tollgate.generation")


def gateway_timeout() -> APIError:
    return APIError(504, "The model did not answer in time.", type="server_error", code="timeout")


def generation_failed() -> APIError:
    return APIError(502, "The model failed while generating; please retry.", type="server_error",
                    code="generation_failed")


def tenant_queue_full() -> APIError:
    return APIError(429, "Too many of your requests are already waiting for this model; retry shortly.",
                    type="rate_limit_error", code="too_many_queued_requests", headers={"Retry-After": "1"})


def request_for(run: Run, version: str) -> GenerationRequest:
    job, principal = run.job, run.principal
    # A request may lower its own priority (a higher number), never raise it above its tenant's plan.
    priority = principal.priority if job.priority is None else max(principal.priority, job.priority)
    return GenerationRequest(
        request_id=run.request_id, version=version, prompt=job.prompt, messages=job.messages,
        max_tokens=run.max_tokens, temperature=job.temperature, top_p=job.top_p, seed=job.seed, stop=job.stop,
        **{**job.sampling, "n": job.generated}, logprobs=job.logprobs, structured=job.structured,
        cache_salt=run.svc.salter.salt(principal.tenant_id), priority=priority,
        tenant=run.svc.salter.tenant_key(principal.tenant_id), tenant_weight=principal.share_weight,
        # Batch lines fill idle steps at their discount: a reservation guarantees interactive work.
        reserved_tokens_per_s=reserved_rate(principal, run.model) if run.kind == "interactive" else 0.0,
        upstream_body=job.body)


def upstream_refused(e: UpstreamRefused) -> APIError:
    """The last candidate was an upstream that refused before any token, and no fallback took the request."""
    headers = {"Retry-After": str(max(1, round(e.retry_after_s or 1)))}
    if e.status == 429:
        return APIError(429, "The model's upstream is rate limiting; retry shortly.", type="rate_limit_error",
                        code="upstream_rate_limited", headers=headers)
    if e.status == 504:
        return APIError(504, "The model's upstream did not answer in time.", type="server_error",
                        code="upstream_timeout", headers=headers)
    if e.status == 503:
        return APIError(503, "The model's upstream is unavailable; retry shortly.", type="server_error",
                        code="upstream_unavailable", headers=headers)
    return APIError(502, "The model's upstream failed; please retry.", type="server_error", code="upstream_error",
                    headers=headers)


def _bad_parameters(run: Run, message: str) -> APIError:
    """The engine's refusal as a 400; a spec that does not compile is named by the field that asked for it."""
    if message.startswith("structured") and run.job.structured_param is not None:
        param = run.job.structured_param
        return invalid_request(f"{param}: {message.removeprefix('structured: ')}", param=param)
    return invalid_request(message)


async def open_generation(run: Run) -> tuple[AsyncGenerator[GenerationChunk, None], GenerationChunk]:
    """The stream and its first chunk. A version that is down or full is skipped (fallbacks); the client's
    error otherwise: 400 bad parameters, 429 its queue is full, 502 failed, 503 no capacity, 504 timeout."""
    svc, refusal = run.svc, None
    for version in run.candidates:
        if version not in svc.loaded_versions():
            continue
        stream = svc.backend.stream(request_for(run, version))
        try:
            async with asyncio.timeout(run.remaining_s()):
                first = await anext(stream)
        except (VersionUnavailable, VersionOverloaded) as e:
            await stream.aclose()
            svc.router.observe(version, ok=False, ttft_s=None, latency_s=time.perf_counter() - run.started)
            log.warning("version refused the request, trying the next", extra={"version": version, "why": str(e)})
            refusal = e if isinstance(e, UpstreamRefused) else None
            continue
        except TenantQueueFull:
            await stream.aclose()
            raise tenant_queue_full() from None
        except ValueError as e:
            await stream.aclose()
            raise _bad_parameters(run, str(e)) from None
        except TimeoutError:
            await stream.aclose()
            run.version = version
            raise gateway_timeout() from None
        except (StopAsyncIteration, GenerationFailed):
            await stream.aclose()
            run.version = version
            raise generation_failed() from None
        except BaseException:  # cancelled (the client left): abort it in the engine before going
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            raise
        run.began(version, first)
        return stream, first
    raise upstream_refused(refusal) if refusal is not None else no_capacity()
