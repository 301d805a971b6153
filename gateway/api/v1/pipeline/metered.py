"""A generation streamed to a client after its headers went out: the one loop every streaming format shares
(chat and completions, the Responses API, the Messages API), and how such a stream ends when it breaks."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator

from gateway.api.v1.pipeline.choices import Choices
from gateway.api.v1.pipeline.generate import gateway_timeout, generation_failed
from gateway.api.v1.pipeline.guard import as_api_error
from gateway.api.v1.pipeline.output_guard import OutputGuard
from gateway.api.v1.pipeline.run import Run
from gateway.domain.errors import APIError
from gateway.guardrails.errors import ContentBlocked, GuardrailFailed
from gateway.serving.base import CompletionDelta, GenerationChunk, GenerationFailed

log = logging.getLogger("tollgate.generation")


class BudgetRanOut(Exception):
    """The month's token budget ran out during the stream."""


def quota_ran_out() -> APIError:
    return APIError(429, "You exceeded your current quota: the month's token budget ran out during this response.",
                    type="insufficient_quota", code="insufficient_quota")


async def sendable_deltas(run: Run, stream: AsyncGenerator[GenerationChunk, None], first: GenerationChunk,
                          choices: Choices, guard: OutputGuard | None) -> AsyncGenerator[list[CompletionDelta], None]:
    """Each chunk's deltas as they may be sent: metered against the month's budget (BudgetRanOut past it),
    observed for billing, merged into `choices`, held back or redacted by the output guard. Ends after the chunk
    that finishes every completion; GenerationFailed when the stream ends without one, TimeoutError past the
    run's deadline."""
    chunk: GenerationChunk | None = first
    while chunk is not None:
        if not await run.within_budget(chunk):
            raise BudgetRanOut
        run.observe(chunk)
        deltas = choices.add(chunk)
        yield deltas if guard is None else guard.deltas(deltas)
        if chunk.finish_reason is not None:  # every completion has finished
            return
        async with asyncio.timeout(run.remaining_s()):
            chunk = await anext(stream, None)
    raise GenerationFailed("the generation ended without a finish reason")


def broken_stream(error: Exception) -> tuple[str, APIError]:
    """How a stream that broke after its headers ends: the ledger status and the error event the client gets.
    A guardrail's block sent nothing it matched (held back) and bills the tokens made; anything unexpected is
    logged for the operator, since the client learns of it only in the stream."""
    if isinstance(error, BudgetRanOut):
        return "truncated", quota_ran_out()
    if isinstance(error, (ContentBlocked, GuardrailFailed)):
        return "blocked", as_api_error(error)
    if isinstance(error, TimeoutError):
        return "error", gateway_timeout()
    if isinstance(error, GenerationFailed):
        return "error", generation_failed()
    log.error("stream failed", exc_info=error)
    return "error", APIError(500, "The server had an error while streaming.", type="server_error")
