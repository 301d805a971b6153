"""A run's answer on the wire: whole (JSON) or streamed (SSE); the run is finished either way."""
from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from typing import Protocol
from urllib.parse import quote

import anyio
from fastapi import Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel

from gateway.api.v1.pipeline.choices import Choice, Choices
from gateway.api.v1.pipeline.generate import gateway_timeout, generation_failed, open_generation
from gateway.api.v1.pipeline.guard import HEADER as GUARDRAILS_HEADER
from gateway.api.v1.pipeline.guard import as_api_error, header_value
from gateway.api.v1.pipeline.metered import broken_stream, sendable_deltas
from gateway.api.v1.pipeline.output_guard import OutputGuard
from gateway.api.v1.pipeline.run import Run
from gateway.domain.errors import APIError
from gateway.guardrails.errors import ContentBlocked, GuardrailFailed
from gateway.schemas.openai import Usage
from gateway.serving.base import CompletionDelta, GenerationChunk, GenerationFailed

log = logging.getLogger("tollgate.generation")


class Format(Protocol):
    """How an endpoint spells its output on the wire (chat and completions differ only here)."""

    def opening(self) -> BaseModel | None:
        """The stream's first event, before any text (chat's role delta), or None."""

    def delta(self, deltas: list[CompletionDelta], usage: Usage | None) -> BaseModel | str:
        """One stream event: what each completion gained (and, with continuous usage stats, usage so far); a str
        is the event's JSON, already encoded."""

    def usage_chunk(self) -> BaseModel:
        """The stream's usage event (stream_options.include_usage)."""

    def complete(self, choices: list[Choice]) -> BaseModel:
        """The whole answer."""


# Told of every single-completion generation that ran to an end of its own: (run, its text, finish_reason,
# its token ids). Must not block: the response is still being sent.
Keep = Callable[[Run, str, str | None, list[int]], None]

# A stream's body, in place of the chat/completions SSE (`_sse`) for an endpoint whose events differ (the
# Responses API): given the run, the open generation, its first chunk, the format and `keep`, it yields SSE
# text, and must meter and finish the run as `_sse` does (within_budget, observe, finish_durably, and
# finish in a `finally` that also closes the generation).
StreamBody = Callable[[Run, AsyncGenerator[GenerationChunk, None], GenerationChunk, Format, Keep | None],
                      AsyncIterator[str]]


CLAMP_HEADER = "x-tollgate-max-tokens-clamped"  # "<asked>-><cap>": the tenant's output cap clamped the request


def response_id(run: Run, prefix: str) -> str:
    return f"{prefix}-{run.request_id.removeprefix('req_')}"


def headers(run: Run) -> dict[str, str]:
    out = {**run.reservation.headers, "x-tollgate-model": run.served_as, "x-tollgate-cache": run.cache_status}
    if run.cache_score is not None:
        out["x-tollgate-cache-score"] = f"{run.cache_score:.4f}"
    if run.prompt_version is not None:
        out["x-tollgate-prompt-version"] = run.prompt_version
    if run.rule is not None:
        out["x-tollgate-route-rule"] = run.rule
    if run.clamped is not None:
        out[CLAMP_HEADER] = "{}->{}".format(*run.clamped)
    if run.job is not None and run.job.ignored:
        # Names are client text, a header value is printable ASCII: escape them ("ä" -> "%C3%A4").
        out["x-tollgate-ignored-fields"] = ",".join(quote(name, safe="") for name in run.job.ignored)[:1024]
    fired = header_value(run)
    if fired:
        out[GUARDRAILS_HEADER] = fired[:1024]
    return out


def sse_event(payload: BaseModel | dict | str) -> str:
    """One SSE event; a str payload is JSON already."""
    if isinstance(payload, str):
        return f"data: {payload}\n\n"
    body = payload.model_dump_json() if isinstance(payload, BaseModel) else json.dumps(payload)
    return f"data: {body}\n\n"


def status_of(e: BaseException) -> str:
    if isinstance(e, APIError):
        return "error" if e.status >= 500 else "refused"
    return "aborted" if isinstance(e, asyncio.CancelledError) else "error"


async def respond(run: Run, fmt_factory: Callable[[Run], Format], *, keep: Keep | None = None,
                  request: Request | None = None, stream_body: StreamBody | None = None):
    """Open the generation, then answer it whole or as a stream. A client that leaves before its answer is out
    (`request` is watched for the disconnect) aborts the generation at once: billed only what was made."""
    try:
        opened = await _unless_gone(open_generation(run), request)
    except BaseException as e:
        run.finish(status_of(e))
        raise
    if opened is None:
        run.finish("aborted")  # gone before the first token: nothing made, nothing billed, all released
        return Response(status_code=499)
    stream, first = opened
    fmt = fmt_factory(run)
    if run.job.stream:
        # Starlette cancels a streaming response's body when the client leaves: _sse's finally handles it.
        body = (stream_body or _sse)(run, stream, first, fmt, keep)
        return StreamingResponse(body, media_type="text/event-stream",
                                 headers={**headers(run), "cache-control": "no-cache"})
    answer = await _unless_gone(_collect(run, stream, first, fmt, keep), request)
    return Response(status_code=499) if answer is None else answer  # gone: aborted and billed in _collect


async def _unless_gone(work, request: Request | None):
    """`work`'s result, or None once the client disconnected first (`work` is then cancelled and has run its
    own cleanup). Without a request to watch, just `work`."""
    task = asyncio.ensure_future(work)
    if request is None:
        return await task
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not task.done():  # the client left first, or this handler itself is being cancelled
            task.cancel()
    try:
        return await task
    except asyncio.CancelledError:
        if gone.cancelled() or not gone.done():
            raise  # the handler was cancelled, not the client gone
        return None


async def _disconnected(request: Request) -> None:
    """Returns when the client disconnects (the body was read already, so only that message is left)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _collect(run: Run, stream: AsyncGenerator[GenerationChunk, None], first: GenerationChunk, fmt: Format,
                   keep: Keep | None):
    choices, status = Choices(), "error"
    choices.add(first)
    run.observe(first)
    try:
        async with asyncio.timeout(run.remaining_s()):
            async for chunk in stream:
                run.observe(chunk)
                choices.add(chunk)
        status = "ok"
    except (TimeoutError, GenerationFailed) as e:
        # The client gets an error and no usage: nothing it was told is billed (the tokens were ours to lose).
        run.produced = False
        raise (gateway_timeout() if isinstance(e, TimeoutError) else generation_failed()) from None
    except asyncio.CancelledError:
        status = "aborted"  # the client left: what was generated so far is billed
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await stream.aclose()
        if status != "ok":
            run.finish(status)
    answer, blocked = choices.best(run.job.n), None
    guard = OutputGuard.of(run)
    if guard is not None:
        try:
            answer = guard.choices(answer)
        except (ContentBlocked, GuardrailFailed) as e:
            status, blocked = "blocked", as_api_error(e)  # the model's work is billed; none of it is sent
        guard.report()
    await run.finish_durably(status)  # the row is safe before the answer leaves
    if blocked is not None:
        raise blocked
    if keep is not None and run.job.generated == 1:
        keep(run, answer[0].text, answer[0].finish_reason, answer[0].token_ids if guard is None else [])
    return JSONResponse(fmt.complete(answer).model_dump(mode="json", exclude_none=False), headers=headers(run))


async def _sse(run: Run, stream: AsyncGenerator[GenerationChunk, None], first: GenerationChunk, fmt: Format,
               keep: Keep | None):
    status, error = "aborted", None  # "aborted" until the stream reaches an end of its own
    choices = Choices()
    guard = OutputGuard.of(run)  # None: no output rule, the text goes out as generated
    try:
        opening = fmt.opening()
        if opening is not None:
            yield sse_event(opening)
        try:
            async with aclosing(sendable_deltas(run, stream, first, choices, guard)) as sendable:
                async for deltas in sendable:
                    deltas = [d for d in deltas if d.text or d.finish_reason or d.logprobs or d.tool_calls]
                    if deltas:
                        yield sse_event(fmt.delta(deltas, run.usage() if run.job.continuous_usage else None))
            status = "ok"
            if keep is not None and run.job.generated == 1:
                # A guarded text may differ from the tokens: then no token ends are kept (no cuts served).
                text = choices.first().text if guard is None else guard.text(0)
                keep(run, text, choices.first().finish_reason, choices.first().token_ids if guard is None else [])
        except Exception as e:
            status, error = broken_stream(e)
        if guard is not None:
            guard.report()
        # The row is durable before the client learns what it is billed for: a gateway killed after the
        # usage chunk or [DONE] cannot lose it.
        await run.finish_durably(status)
        # Usage first: an SDK stops reading at an error event, and the client should still
        # learn what it is billed for.
        if run.job.include_usage:
            yield sse_event(fmt.usage_chunk())
        if error is not None:
            yield sse_event(error.body())
        if guard is not None and guard.policy.output_tally:
            # The header went out before the output rules fired: an SSE comment says it (clients skip comments).
            yield f": {GUARDRAILS_HEADER}: {guard.policy.output_tally.header()}\n\n"
        yield "data: [DONE]\n\n"
    finally:
        # Runs on a normal end, and when the client leaves (the task is cancelled): abort the
        # generation so the engine frees its blocks, then bill what was generated so far.
        with anyio.CancelScope(shield=True):
            await stream.aclose()
        run.finish(status)


