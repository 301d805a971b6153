"""A batch line through the same pipeline as the HTTP request it stands for: parsed as that endpoint's body,
admitted against the tenant's limits and budget, generated at the batch priority, billed as batch work.

The runner learns one of three things: the endpoint's answer (a 200, or an error it would have sent, e.g. a
bad body or the month's budget spent: the line fails cleanly); Paused (a rate limit, a full queue, no
capacity: the same line is tried again after the wait; a timeout or a failed generation: a few times, then
its 504 or 502 is the answer); or the key it runs as is no longer valid (a 401
answer, so a revoked key stops a batch's remaining lines)."""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable

from fastapi import Response

from gateway.domain.errors import APIError, invalid_api_key

from gateway.api.errors import from_limit_error
from gateway.api.v1.body import parse
from gateway.api.v1.chat import answer_chat
from gateway.api.v1.completions import answer_completion
from gateway.api.v1.embeddings import embed
from gateway.api.v1.pipeline.job import Job
from gateway.batch.output import LineResult
from gateway.batch.runner import Paused
from gateway.billing.ledger import LedgerFull
from gateway.limits.errors import LimitError, QuotaExceeded
from gateway.api.v1.prompted import with_prompt
from gateway.schemas.openai import ChatCompletionRequest, CompletionRequest, EmbeddingRequest
from gateway.security.authenticator import InvalidKey, principal_by_key_id
from gateway.security.principal import Principal
from gateway.services import Services

PRINCIPAL_TTL_S = 5.0  # as the authenticator's cache: a revoked key stops a batch within this long
RETRY_S = 1.0  # a refusal without a Retry-After of its own


class LineExecutor:
    """`gateway.batch.runner.Execute` over this process's services."""

    def __init__(self, services: Services, *, priority: int) -> None:
        self.svc, self.priority = services, priority
        self._principals: dict[str, tuple[float, Principal]] = {}
        self._endpoints: dict[str, Callable[[Principal, bytes, str], Awaitable[LineResult]]] = {
            "/v1/chat/completions": self._chat, "/v1/completions": self._completion,
            "/v1/embeddings": self._embeddings}

    async def __call__(self, key_id: str, endpoint: str, body: dict, request_id: str) -> LineResult:
        try:
            principal = await self._principal(key_id)
        except InvalidKey as e:
            return _error(invalid_api_key(str(e)))
        raw = json.dumps(body).encode()
        try:
            return await self._endpoints[endpoint](principal, raw, request_id)
        except QuotaExceeded as e:
            return _error(from_limit_error(e))  # the budget is spent: this line fails, cleanly
        except LimitError as e:  # a rate limit, or the limits unreachable: wait it out
            raise Paused(getattr(e, "retry_after_s", RETRY_S), e.message) from None
        except LedgerFull:
            raise Paused(RETRY_S, "usage cannot be recorded right now") from None
        except APIError as e:
            if e.status == 503 or e.code == "too_many_queued_requests":
                raise Paused(_retry_after(e), e.message) from None
            if e.status in (502, 504):  # timed out or failed in the engine (unbilled): a few more tries
                raise Paused(RETRY_S, e.message, fallback=_error(e)) from None
            return _error(e)

    async def _principal(self, key_id: str) -> Principal:
        cached = self._principals.get(key_id)
        if cached is not None and time.monotonic() - cached[0] < PRINCIPAL_TTL_S:
            return cached[1]
        principal = await asyncio.to_thread(self._load, key_id)
        self._principals[key_id] = (time.monotonic(), principal)
        return principal

    def _load(self, key_id: str) -> Principal:
        with self.svc.database.session() as session:
            return principal_by_key_id(session, key_id)

    async def _chat(self, principal: Principal, raw: bytes, request_id: str) -> LineResult:
        body, prompt_version = parse(ChatCompletionRequest, raw), None
        if body.prompt is not None:
            body, prompt_version = await with_prompt(self.svc, raw, body.prompt, key=body.user or request_id,
                                                     tenant_id=principal.tenant_id)
        job = Job.from_chat(body)
        job.as_batch_line(self.priority)
        return _result(await answer_chat(self.svc, principal, job, body, request_id, prompt_version=prompt_version))

    async def _completion(self, principal: Principal, raw: bytes, request_id: str) -> LineResult:
        job = Job.from_completion(parse(CompletionRequest, raw))
        job.as_batch_line(self.priority)
        return _result(await answer_completion(self.svc, principal, job, request_id))

    async def _embeddings(self, principal: Principal, raw: bytes, request_id: str) -> LineResult:
        answer, _ = await embed(self.svc, principal, parse(EmbeddingRequest, raw), request_id, kind="batch")
        return LineResult(200, answer.model_dump(mode="json"))


def _result(response: Response) -> LineResult:
    return LineResult(response.status_code, json.loads(response.body))


def _error(e: APIError) -> LineResult:
    return LineResult(e.status, e.body())


def _retry_after(e: APIError) -> float:
    try:
        return float(e.headers.get("Retry-After", RETRY_S))
    except ValueError:
        return RETRY_S
