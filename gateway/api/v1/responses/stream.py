"""A response streamed as the Responses API's events, the pipeline's StreamBody for /v1/responses:

    response.created, response.in_progress, response.output_item.added, response.content_part.added,
    response.output_text.delta ..., response.output_text.done, response.content_part.done,
    response.output_item.done, then response.completed (or response.incomplete at max_output_tokens)

each with its sequence_number. A stream cut short (the model failed or timed out, the month's budget ran out)
ends in response.failed, which carries what was made and its usage. The run is metered, billed and finished as
the chat stream's are (respond._sse): the ledger row is durable, and a stored response saved, before the
final event; a client that leaves aborts the generation and is billed what was made."""
from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any

import anyio
from pydantic import BaseModel

from gateway.api.v1.pipeline.choices import Choices
from gateway.api.v1.pipeline.metered import broken_stream, sendable_deltas
from gateway.api.v1.pipeline.output_guard import OutputGuard
from gateway.api.v1.pipeline.respond import Keep
from gateway.api.v1.pipeline.run import Run
from gateway.api.v1.responses.format import ResponsesFormat
from gateway.schemas.responses import OutputText
from gateway.serving.base import GenerationChunk

log = logging.getLogger("tollgate.generation")


class Events:
    """SSE text for one stream's events, numbered in the order sent."""

    def __init__(self) -> None:
        self.sequence_number = 0

    def __call__(self, type_: str, **fields: Any) -> str:
        body = {"type": type_, "sequence_number": self.sequence_number,
                **{k: v.model_dump(mode="json") if isinstance(v, BaseModel) else v for k, v in fields.items()}}
        self.sequence_number += 1
        return f"event: {type_}\ndata: {json.dumps(body)}\n\n"


async def responses_sse(run: Run, stream: AsyncGenerator[GenerationChunk, None], first: GenerationChunk,
                        fmt: ResponsesFormat, keep: Keep | None = None) -> AsyncIterator[str]:
    status, error = "aborted", None  # "aborted" until the stream reaches an end of its own
    choices, event = Choices(), Events()
    guard = OutputGuard.of(run)  # None: no output rule, the text goes out as generated
    at = {"item_id": fmt.message_id, "output_index": 0, "content_index": 0}
    try:
        yield event("response.created", response=fmt.in_progress())
        yield event("response.in_progress", response=fmt.in_progress())
        yield event("response.output_item.added", output_index=0, item=fmt.message("", "in_progress"))
        yield event("response.content_part.added", **at, part=OutputText(text=""))
        try:
            async with aclosing(sendable_deltas(run, stream, first, choices, guard)) as sendable:
                async for deltas in sendable:
                    for d in deltas:
                        if d.text:
                            yield event("response.output_text.delta", **at, delta=d.text, logprobs=[])
            status = "ok"
        except Exception as e:
            status, error = broken_stream(e)
        # The row is durable before the client learns what it is billed for.
        if guard is not None:
            guard.report()
        await run.finish_durably(status)
        answer = choices.first()
        text = answer.text if guard is None else guard.text(0)  # what the client was sent
        if error is not None:
            yield event("response.failed", response=fmt.failed(text, error))
            return
        final = fmt.finished(text, answer.finish_reason)
        if fmt.save is not None:
            with anyio.CancelScope(shield=True):  # stored before the client can ask for it
                await fmt.save(final)
        item = final.output[0]
        yield event("response.output_text.done", **at, text=text, logprobs=[])
        yield event("response.content_part.done", **at, part=item.content[0])
        yield event("response.output_item.done", output_index=0, item=item)
        yield event("response.incomplete" if final.status == "incomplete" else "response.completed", response=final)
    finally:
        # Runs on a normal end, and when the client leaves (the task is cancelled): abort the
        # generation so the engine frees its blocks, then bill what was generated so far.
        with anyio.CancelScope(shield=True):
            await stream.aclose()
        run.finish(status)
