"""A message streamed as Anthropic's events, the pipeline's StreamBody for /v1/messages:

    message_start, then per content block content_block_start, content_block_delta ..., content_block_stop
    (a `ping` after the first block opens), then message_delta (stop_reason, stop_sequence, cumulative usage)
    and message_stop

each as `event: NAME` + `data: JSON`. Text goes out as text_delta; a tool call, once the model has written it
whole, as a tool_use block with one input_json_delta. A stream cut short (the model failed or timed out, the
month's budget ran out, a guardrail blocked) ends in an `error` event and never a message_stop. The run is
metered, billed and finished as the chat stream's are (respond._sse): the ledger row is durable before the
client hears its usage; a client that leaves aborts the generation and is billed what was made."""
from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any

import anyio
from pydantic import BaseModel

from gateway.api.v1.messages.format import MessagesFormat, native_calls, tool_use
from gateway.api.v1.pipeline.choices import Choice, Choices
from gateway.api.v1.pipeline.metered import broken_stream, sendable_deltas
from gateway.api.v1.pipeline.output_guard import OutputGuard
from gateway.api.v1.pipeline.respond import Keep
from gateway.api.v1.pipeline.run import Run
from gateway.domain.errors import APIError
from gateway.schemas.anthropic import error_body
from gateway.serving.base import GenerationChunk
from gateway.tools.parser import CallStream, ParsedCall

log = logging.getLogger("tollgate.generation")

_WORDS = re.compile(r"\S+\s*|\s+")  # a replayed answer's pieces; joined they are the text again


def event(name: str, **fields: Any) -> str:
    body = {"type": name, **{k: v.model_dump(mode="json") if isinstance(v, BaseModel) else v
                             for k, v in fields.items()}}
    return f"event: {name}\ndata: {json.dumps(body)}\n\n"


def error_event(e: APIError) -> str:
    return event("error", error=error_body(e.status, e.message)["error"])


class Blocks:
    """One answer's text as it arrives -> the content block events that carry it: text in a text block, each
    tool call complete (the parser holds a call back until its block closes) in a tool_use block of its own."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.calls = CallStream(names) if names else None
        self.index = -1  # the block last opened
        self.open = False  # a text block is open
        self.pinged = False
        self.called = False

    def feed(self, text: str) -> list[str]:
        if self.calls is None:
            return self._text(text)
        piece = self.calls.feed(text)
        return self._text(piece.text) + [e for call in piece.calls for e in self._call(call)]

    def finish(self, native: list[dict] | None = None) -> list[str]:
        """The events that close the content: text still held back, an upstream's own tool calls (whole, once
        their deltas have all come), and the open block's end."""
        out = self._text(self.calls.finish().text) if self.calls is not None else []
        out += [e for call in native_calls(native) for e in self._call(call)]
        out += self._close()
        if not self.pinged:  # an empty answer: no block ever opened
            self.pinged = True
            out.append(event("ping"))
        return out

    def _start(self, block: BaseModel | dict) -> list[str]:
        self.index += 1
        out = [event("content_block_start", index=self.index, content_block=block)]
        if not self.pinged:
            self.pinged = True
            out.append(event("ping"))
        return out

    def _close(self) -> list[str]:
        if not self.open:
            return []
        self.open = False
        return [event("content_block_stop", index=self.index)]

    def _text(self, text: str) -> list[str]:
        if not text:
            return []
        out = []
        if not self.open:
            out += self._start({"type": "text", "text": ""})
            self.open = True
        return [*out, event("content_block_delta", index=self.index, delta={"type": "text_delta", "text": text})]

    def _call(self, call: ParsedCall) -> list[str]:
        self.called = True
        block = tool_use(call)
        out = self._close() + self._start({"type": "tool_use", "id": block.id, "name": block.name, "input": {}})
        out.append(event("content_block_delta", index=self.index,
                         delta={"type": "input_json_delta", "partial_json": json.dumps(block.input)}))
        return [*out, event("content_block_stop", index=self.index)]


def _ending(fmt: MessagesFormat, blocks: Blocks, choice: Choice) -> list[str]:
    """After the content: message_delta with the stop reason and the usage billed, then message_stop."""
    stop_reason, stop_sequence = fmt.stop(choice, blocks.called)
    usage = fmt.usage()
    return [event("message_delta", delta={"stop_reason": stop_reason, "stop_sequence": stop_sequence},
                  usage=usage), event("message_stop")]


async def messages_sse(run: Run, stream: AsyncGenerator[GenerationChunk, None], first: GenerationChunk,
                       fmt: MessagesFormat, keep: Keep | None = None) -> AsyncIterator[str]:
    status, error = "aborted", None  # "aborted" until the stream reaches an end of its own
    choices, blocks = Choices(), Blocks(fmt.names)
    guard = OutputGuard.of(run)  # None: no output rule, the text goes out as generated
    try:
        yield event("message_start", message=fmt.message([], None, None))
        try:
            async with aclosing(sendable_deltas(run, stream, first, choices, guard)) as sendable:
                async for deltas in sendable:
                    for d in deltas:
                        for e in blocks.feed(d.text):
                            yield e
            status = "ok"
            if keep is not None and run.job.generated == 1:
                text = choices.first().text if guard is None else guard.text(0)
                keep(run, text, choices.first().finish_reason, choices.first().token_ids if guard is None else [])
        except Exception as e:
            status, error = broken_stream(e)
        if guard is not None:
            guard.report()
        await run.finish_durably(status)  # durable before the client hears what it is billed for
        if error is not None:
            yield error_event(error)
            return
        for ending in blocks.finish(choices.first().tool_calls) + _ending(fmt, blocks, choices.first()):
            yield ending
    finally:
        # Runs on a normal end, and when the client leaves (the task is cancelled): abort the
        # generation so the engine frees its blocks, then bill what was generated so far.
        with anyio.CancelScope(shield=True):
            await stream.aclose()
        run.finish(status)


async def replay_sse(run: Run, fmt: MessagesFormat, text: str, finish_reason: str) -> AsyncIterator[str]:
    """A semantic-cache hit as the same events a generation sends (already billed as a hit by the caller)."""
    status = "aborted"  # until the last piece is out
    blocks = Blocks(fmt.names)
    try:
        yield event("message_start", message=fmt.message([], None, None))
        for piece in _WORDS.findall(text):
            for e in blocks.feed(piece):
                yield e
        status = "ok"
        await run.finish_durably(status)  # durable before the client hears its usage
        for e in blocks.finish() + _ending(fmt, blocks, Choice(0, [text], finish_reason=finish_reason)):
            yield e
    finally:
        run.finish(status)
